"""The LLM judge of the ``limur`` metric: prompt, reply parsing, an OpenAI-compatible client and a cache.

Standard library only. The judge sees the task as the model saw it, the reference answer and the model's
answer, and must reply 1, 0.5 or 0 (the seed's rubric). A reply that is not one of those is *unparseable*:
it is counted and reported, never scored. A request that fails after its retries is *failed*, likewise.
The API key is sent in the Authorization header only; it is masked in every message this module produces.
"""

import hashlib
import http.client
import json
import logging
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "Ты — строгий и беспристрастный эксперт, проверяющий ответы языковых моделей на задания с выбором ответа."
)
RUBRIC = """\
Сравни ответ модели с эталонным ответом и оцени его правильность и полноту:
1 — ответ полностью правильный и полный;
0.5 — ответ частично правильный или неполный, но содержит существенную часть правильного ответа;
0 — ответ неправильный, противоречивый или не содержит правильного ответа.
Выведи только оценку: 1, 0.5 или 0."""
USER_TEMPLATE = """\
### Задание:
{task}

### Эталонный ответ:
{reference}

### Ответ модели:
{answer}

### Критерий оценки:
{rubric}"""

_SCORE = re.compile(r"(?:(?:оценка|score)\s*[:=]?\s*)?(1(?:[.,]0*)?|0(?:[.,]5|[.,]0*)?|[.,]5)\.?", re.IGNORECASE)
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
_FATAL_STATUS = {401, 403, 404}


class JudgeConfigError(RuntimeError):
    """The judge cannot work at all (bad URL, model, key): the run stops instead of failing every request."""


class JudgeRequestError(RuntimeError):
    """One judge request failed after its retries, or its reply was not a chat completion."""


def judge_messages(task, reference, answer):
    user = USER_TEMPLATE.format(task=task, reference=reference, answer=answer, rubric=RUBRIC)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_score(reply):
    """1.0, 0.5 or 0.0 from a judge reply (text or number), or None when it is none of them."""
    if isinstance(reply, bool):
        return None
    if isinstance(reply, (int, float)):
        return float(reply) if reply in (0, 0.5, 1) else None
    if not isinstance(reply, str):
        return None
    match = _SCORE.fullmatch(reply.strip())
    return float(match.group(1).replace(",", ".")) if match else None


def chat_completions_url(base_url):
    """``…/chat/completions`` as given; ``…/v1`` gets ``/chat/completions``; a bare host gets ``/v1/chat/completions``."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


def public_url(url):
    """The URL without user:password@ and without its query string, fit for messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class Endpoint:
    """A judge served by an OpenAI-compatible ``/v1/chat/completions`` API (vLLM, llama.cpp, hosted services)."""

    def __init__(self, base_url, model, api_key=None, timeout=60.0, retries=3, backoff=1.0, max_tokens=16):
        if urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
            raise JudgeConfigError(f"judge URL must start with http:// or https://, got {public_url(base_url)!r}")
        self.url = chat_completions_url(base_url)
        self.model = model
        self._api_key = api_key or None
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_tokens = max_tokens
        self.name = f"{model} at {public_url(self.url)}"

    def __repr__(self):
        return f"Endpoint({self.name!r})"

    def __call__(self, task, reference, answer):
        body = {"model": self.model, "messages": judge_messages(task, reference, answer),
                "temperature": 0, "max_tokens": self.max_tokens}
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        for attempt in range(self.retries + 1):
            reply, wait = self._attempt(data, last=attempt == self.retries)
            if reply is not None:
                return reply
            time.sleep(max(wait, self.backoff * 2**attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _attempt(self, data, last):
        """``(reply, None)``, or ``(None, seconds)`` after a retryable failure; the last attempt raises instead."""
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as err:
            problem = f"HTTP {err.code} {err.reason}: {self.brief(_body_of(err))}"
            if err.code in _FATAL_STATUS:
                raise JudgeConfigError(f"judge {self.name}: {problem}") from None
            if err.code not in _RETRY_STATUS or last:
                raise JudgeRequestError(problem) from None
            return None, _retry_after(err)
        except (TimeoutError, socket.timeout, urllib.error.URLError, ConnectionError, http.client.HTTPException) as err:
            if last:
                raise JudgeRequestError(self.mask(_describe(err, self.timeout))) from None
            return None, 0.0
        return self._content(payload), None

    def _content(self, payload):
        try:
            content = json.loads(payload.decode("utf-8"))["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise JudgeRequestError(f"malformed response body (not a chat completion): {self.brief(payload)}")
        return content

    def mask(self, text):
        return text.replace(self._api_key, "***") if self._api_key else text

    def brief(self, payload):
        """The start of a response body for a message, masked before it is cut (no key prefix can survive)."""
        return self.mask(payload[:65536].decode("utf-8", "replace"))[:200].replace("\n", " ")


def _body_of(err):
    try:
        return err.read()
    except Exception:  # the body of an error reply is a courtesy: never let reading it hide the status
        return b""


def _describe(err, timeout):
    reason = getattr(err, "reason", err)
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"no reply within {timeout} s"
    return f"{type(reason).__name__}: {reason}"


def _retry_after(err):
    try:
        return min(float(err.headers.get("Retry-After", 0)), 60.0)
    except (TypeError, ValueError):
        return 0.0


def cache_key(judge_name, task, reference, answer):
    text = json.dumps([judge_name, task, reference, answer], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_cache(path):
    """``{key: reply}`` from a JSON Lines cache file (absent file: empty)."""
    cache = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    try:
                        entry = json.loads(line)
                        cache[entry["key"]] = entry["reply"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        raise ValueError(f"{path}: line {number}: not a judge cache entry") from None
    return cache


def save_cache(path, cache):
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for key, reply in cache.items():
            f.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def judge_all(items, judge, judge_name, concurrency=4, cache=None):
    """Score ``items`` = [(task, reference, answer)] with ``judge``; each distinct item is asked at most once.

    Returns ``(scores, stats)``: one score or None per item, and the counts of the run.
    """
    cache = {} if cache is None else cache
    keys = [cache_key(judge_name, *item) for item in items]
    todo = {}
    for key, item in zip(keys, items, strict=True):
        if key not in cache and key not in todo:
            todo[key] = item
    failures = _ask(judge, todo, cache, concurrency)
    scores, unparseable = [], []
    for key in keys:
        score = None if key in failures else parse_score(cache[key])
        if score is None and key not in failures:
            unparseable.append(_mask(judge, str(cache[key]))[:100])
        scores.append(score)
    stats = {
        "judged": sum(score is not None for score in scores),
        "unparseable": len(unparseable),
        "failed": sum(key in failures for key in keys),
        "requests": len(todo),
        "cache_hits": len(keys) - len(todo),
        "unparseable_replies": sorted(set(unparseable))[:5],
        "errors": sorted(set(failures.values()))[:5],
    }
    return scores, stats


def _ask(judge, todo, cache, concurrency):
    """Fill ``cache`` with the replies to ``todo``; return ``{key: error message}`` of the failed ones."""
    failures = {}
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {key: pool.submit(judge, *item) for key, item in todo.items()}
        try:
            for key, future in futures.items():
                try:
                    cache[key] = future.result()
                except JudgeConfigError:
                    raise
                except Exception as err:  # a judge callable may raise anything: report it, do not score it
                    failures[key] = _mask(judge, f"{type(err).__name__}: {err}")
                    logger.warning("limur judge: %s", failures[key])
        except JudgeConfigError:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return failures


def _mask(judge, text):
    return judge.mask(text) if isinstance(judge, Endpoint) else text
