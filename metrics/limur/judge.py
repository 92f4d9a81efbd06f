"""The LLM judge of the ``limur`` metric: prompt, reply parsing, an OpenAI-compatible client and a cache.

The HTTP client is ``httpx``. The judge sees the task as the model saw it, the reference answer and the model's
answer. Two prompts: ``seed`` (qahub's; the judge replies 1, 0.5 or 0) and ``mera`` (MERA's
``benchmark_tasks/mera_judge.py`` with ``compute_llm_judge`` of MERA's lm-eval fork: criterion «Правильность
ответа», rubric 0/1/2, one user message, temperature 0, ``max_tokens`` 256, the grade the *last* number in the
reply divided by 2 and clamped to [0, 1]). A reply that is not a grade is *unparseable*, a request that fails
after its retries is *failed*: both are counted and reported, and score 0 in the mean over all examples.
The API key is sent in the Authorization header only, never to another address (redirects are not
followed) and never over plain http to a host that is not loopback unless asked; it is masked in every
message this module produces and in every reply it returns (so the cache never holds it), in the forms a
JSON text can spell it too (``\\u0073k-…``, ``\\/``).
"""

import base64
import hashlib
import ipaddress
import json
import logging
import math
import os
import re
import socket
import tempfile
import threading
import time
import urllib.parse
import uuid
import zlib
from concurrent.futures import CancelledError, ThreadPoolExecutor
from email.utils import parsedate_to_datetime

import httpx
from filelock import FileLock

from .judge_settings import as_float as _as_float
from .judge_settings import check_options

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

# MERA-Evaluation/MERA benchmark_tasks/mera_judge.py (commit 62309eb): the prompt is sent as one user message
MERA_CRITERIA_NAME = "Правильность ответа"
MERA_CRITERIA_RUBRICS = """0: Дан неправильный ответ или ответ отсутствует.

1: Ответ модели неполный (не на все вопросы задания получен ответ, в формулировке ответа отсутствует часть информации).

2: Ответ модели совпадает с эталонным или эквивалентен ему."""
MERA_JUDGE_PROMPT = """### Задание для оценки:
{instruction}

### Эталонный ответ:
{reference_answer}

### Ответ для оценки:
{answer}

### Критерий оценки:
{criteria_name}

### Шкала оценивания по критерию:
{criteria_rubrics}"""
MERA_MAX_SCORE = 2.0
MERA_MAX_TOKENS = 256  # compute_llm_judge's default, which mera_judge.py does not change
SEED_MAX_TOKENS = 16  # «1», «0.5» or «0»
# compute_llm_judge: ``float(re.findall(r"(\d+(?:\.\d+)?)", content)[-1])``, no number an error (scored 0)
MERA_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")
PROMPTS = ("seed", "mera")

_SCORE = re.compile(r"(?:(?:оценка|score)\s*(?:[:=]\s*)?)?(1(?:[.,]0*)?|0(?:[.,]5|[.,]0*)?|[.,]5)\.?", re.IGNORECASE)
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}
_FATAL_STATUS = {401, 403, 404}
MAX_BODY = 1 << 20  # a chat completion of a few hundred tokens is far smaller (capped after decoding)
DECODE_STEP = 1 << 16  # the most bytes one decoding step may produce
MAX_RETRY_AFTER = 60.0
# cache entries of the endpoint judge are keyed on the prompt too: changing it invalidates them
PROMPT_IDS = {
    "seed": hashlib.sha256(json.dumps([SYSTEM_PROMPT, RUBRIC, USER_TEMPLATE]).encode()).hexdigest()[:16],
    "mera": hashlib.sha256(json.dumps([MERA_JUDGE_PROMPT, MERA_CRITERIA_NAME, MERA_CRITERIA_RUBRICS]).encode()).hexdigest()[:16],
}
PROMPT_ID = PROMPT_IDS["seed"]


class JudgeConfigError(RuntimeError):
    """The judge cannot work at all (bad URL, model, key): the run stops instead of failing every request."""


class JudgeRequestError(RuntimeError):
    """One judge request failed after its retries, or its reply was not a chat completion."""


def check_prompt(prompt):
    if prompt not in PROMPTS:
        raise JudgeConfigError(f"judge_prompt must be one of {', '.join(PROMPTS)}, got {prompt!r}")
    return prompt


def judge_messages(task, reference, answer, prompt="seed", template=None):
    """The chat messages of one judgement; ``template`` replaces MERA's prompt (``LM_EVAL_JUDGE_PROMPT``)."""
    if prompt == "mera":
        return [{"role": "user", "content": mera_prompt(task, reference, answer, template)}]
    user = USER_TEMPLATE.format(task=task, reference=reference, answer=answer, rubric=RUBRIC)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def mera_prompt(instruction, reference, answer, template=None):
    """MERA's judge prompt as ``build_judge_prompt`` and ``compute_llm_judge`` fill it: the criterion and the
    task text (its braces escaped) first, then the two answers with ``str.format``, which never reads braces
    inside the values it inserts."""
    template = MERA_JUDGE_PROMPT if template is None else template
    prompt = (template.replace("{reference_answer}", "{reference}").replace("{answer}", "{prediction}")
              .replace("{criteria_name}", MERA_CRITERIA_NAME).replace("{criteria_rubrics}", MERA_CRITERIA_RUBRICS)
              .replace("{instruction}", instruction.replace("{", "{{").replace("}", "}}")))
    return prompt.format(reference=reference, prediction=answer)


def check_template(template):
    """A replacement MERA prompt must fill as MERA fills it (else every judgement would fail the same way)."""
    if template is not None:
        try:
            mera_prompt("", "", "", template)
        except (KeyError, IndexError, ValueError) as err:
            raise JudgeConfigError(f"the judge prompt template cannot be filled ({type(err).__name__}: {err}); "
                                   "it may use {instruction}, {reference_answer}, {answer}, {criteria_name}, "
                                   "{criteria_rubrics} and {{ }} for a literal brace") from None
    return template


def parse_mera_grade(reply):
    """MERA's reading of a judge reply: the last number in it (``compute_llm_judge``) divided by 2 and clamped to
    [0, 1] (``normalize_score``); None when the reply holds no number. A number given by a callable judge is
    read as that number."""
    if isinstance(reply, str):
        numbers_found = MERA_NUMBER.findall(reply)
        value = float(numbers_found[-1]) if numbers_found else None
    else:
        value = _as_float(reply)
    if value is None or math.isnan(value):
        return None
    return min(max(value / MERA_MAX_SCORE, 0.0), 1.0)


def grade_parser(prompt):
    return parse_mera_grade if prompt == "mera" else parse_score


def parse_score(reply):
    """1.0, 0.5 or 0.0 from a judge reply (text or number), or None when it is none of them."""
    if isinstance(reply, str):
        match = _SCORE.fullmatch(reply.strip())
        return float(match.group(1).replace(",", ".")) if match else None
    value = _as_float(reply)
    return value if value in (0.0, 0.5, 1.0) else None


def normalise_reply(reply):
    """A reply as the cache keeps it: text, a finite number as float, anything else as an unparseable text."""
    if isinstance(reply, str):
        return reply
    value = _as_float(reply)
    if value is not None and math.isfinite(value):
        return value
    return f"<{type(reply).__name__}: {repr(reply)[:100]}>"


def chat_completions_url(base_url):
    """``…/chat/completions`` as given; ``…/v1`` gets ``/chat/completions``; a bare host gets ``/v1/chat/completions``."""
    base = base_url.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


def public_url(url):
    """The URL without user:password@ and without its query string, fit for messages and records."""
    parts = urllib.parse.urlsplit(url)
    if not parts.netloc and "@" in url:  # no scheme: «user:pw@host» would read as a path
        return url.rpartition("@")[2].partition("?")[0].partition("#")[0]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))


def is_loopback(host):
    if (host or "").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Endpoint:
    """A judge served by an OpenAI-compatible ``/v1/chat/completions`` API (vLLM, llama.cpp, hosted services).

    The HTTP goes through ``httpx`` (no redirects followed, no proxy or netrc from the environment, a fresh
    connection a request). ``timeout`` bounds each request as a whole (connecting, sending, the headers and the
    whole body): httpx's timeouts bound each read, so a watchdog shuts the socket at the deadline.
    """

    def __init__(self, base_url, model, api_key=None, timeout=60.0, retries=3, backoff=1.0, max_tokens=None,
                 allow_insecure_http=False, sleep=time.sleep, prompt="seed", template=None):
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise JudgeConfigError(f"judge URL must start with http:// or https:// and name a host, "
                                   f"got {public_url(base_url)!r}")
        if parts.query or parts.fragment or base_url.rstrip().endswith(("?", "#")):
            raise JudgeConfigError(f"judge URL {public_url(base_url)!r} is followed by a query string or fragment "
                                   "(?… or #…), which would move the request path: give the address alone")
        credentials = "@" in parts.netloc
        if api_key and credentials:
            raise JudgeConfigError("the judge URL holds a user and password and an API key is given too: pass one")
        secret = "the API key" if api_key else "the URL's user and password" if credentials else None
        if secret and parts.scheme == "http" and not is_loopback(parts.hostname) and not allow_insecure_http:
            raise JudgeConfigError(f"refusing to send {secret} over plain http to {parts.hostname}: use https, "
                                   "or pass judge_allow_insecure_http=True (--judge-allow-insecure-http)")
        if api_key and not (api_key.isascii() and api_key.isprintable()):
            raise JudgeConfigError("the judge API key holds characters an HTTP header cannot carry "
                                   "(only printable ASCII); the key itself is not shown")
        check_options(timeout=timeout, retries=retries, backoff=backoff)
        self.prompt = check_prompt(prompt)
        self.template = check_template(template) if prompt == "mera" else None
        self.url = chat_completions_url(public_url(base_url))  # the credentials go in a header, never elsewhere
        self.model = model
        self._authorization = f"Bearer {api_key}" if api_key else basic_authorization(parts)
        self._key_pattern = _key_pattern(secrets(api_key, parts))
        self.timeout = float(timeout)
        self.retries = retries
        self.backoff = float(backoff)
        self.max_tokens = max_tokens or (MERA_MAX_TOKENS if prompt == "mera" else SEED_MAX_TOKENS)
        self.sleep = sleep
        self.name = f"{model} at {public_url(self.url)}"
        prompt_id = PROMPT_IDS[self.prompt] if self.template is None else hashlib.sha256(self.template.encode()).hexdigest()[:16]
        self.identity = json.dumps(["endpoint", self.url, model, self.max_tokens, prompt_id])
        # which judge gave a score, recorded beside it (results, lm-eval's task metadata): no credentials
        self.record = {"url": self.url, "model": model, "prompt": self.prompt, "prompt_id": prompt_id,
                       "max_tokens": self.max_tokens}
        self._client = httpx.Client(timeout=self.timeout, follow_redirects=False, trust_env=False,
                                    limits=httpx.Limits(max_keepalive_connections=0))

    def __repr__(self):
        return f"Endpoint({self.name!r})"

    def __call__(self, task, reference, answer):
        body = {"model": self.model, "messages": judge_messages(task, reference, answer, self.prompt, self.template),
                "temperature": 0, "max_tokens": self.max_tokens}
        data = json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")
        for attempt in range(self.retries + 1):
            reply, wait = self._attempt(data, last=attempt == self.retries)
            if reply is not None:
                return self.mask(reply)  # a reply echoing the key is never cached or shown with it
            self.sleep(max(wait, self.backoff * 2**attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _attempt(self, data, last):
        """``(reply, None)``, or ``(None, seconds)`` after a retryable failure; the last attempt raises instead."""
        try:
            response, payload = self._post(data)
        except (TimeoutError, httpx.HTTPError) as err:  # timeouts, refused or dropped connections
            if last:
                raise JudgeRequestError(self.mask(_describe(err, self.timeout))) from None
            return None, 0.0
        status = response.status_code
        problem = f"HTTP {status} {response.reason_phrase}: {self.brief(payload)}"
        if 300 <= status < 400:
            where = public_url(response.headers.get("Location") or "") or "nowhere"
            raise JudgeConfigError(f"judge {self.name}: HTTP {status} redirect to {where}; redirects are not "
                                   "followed (the API key must not go elsewhere): set judge_url to the final address")
        if status in _FATAL_STATUS:
            raise JudgeConfigError(f"judge {self.name}: {problem}")
        if 200 <= status < 300:
            return self._content(payload), None
        if status not in _RETRY_STATUS or last:
            raise JudgeRequestError(problem)
        return None, retry_after(response.headers.get("Retry-After"))

    def _post(self, data):
        """``(response, body)`` of one POST, all of it within ``self.timeout`` seconds."""
        deadline = time.monotonic() + self.timeout
        sockets = []  # the connection's socket, shut by the watchdog at the deadline (ends any read in progress)
        watchdog = threading.Timer(self.timeout, _shut, (sockets,))
        watchdog.start()
        try:
            with self._client.stream("POST", self.url, content=data, headers=self._headers(),
                                     extensions={"trace": _socket_catcher(sockets)}) as response:
                # httpx would inflate a whole network chunk at once (a gzip bomb, and gzip twice, grow ~1000x a
                # step): the raw bytes are decoded here, a bounded step at a time, and cut at MAX_BODY
                return response, _read_body(response, deadline)
        except httpx.HTTPError:
            if time.monotonic() >= deadline:
                raise TimeoutError() from None
            raise
        finally:
            watchdog.cancel()

    def _headers(self):
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Accept-Encoding": "gzip, deflate"}
        if self._authorization:
            headers["Authorization"] = self._authorization
        return headers

    def _content(self, payload):
        try:
            content = json.loads(payload.decode("utf-8"))["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, IndexError, TypeError):
            content = None
        if not isinstance(content, str):
            raise JudgeRequestError(f"malformed response body (not a chat completion): {self.brief(payload)}")
        return content

    def mask(self, text):
        return self._key_pattern.sub("***", text) if self._key_pattern else text

    def brief(self, payload):
        """The start of a response body for a message, masked before it is cut (no key prefix can survive)."""
        return self.mask(payload[:65536].decode("utf-8", "replace"))[:200].replace("\n", " ")


def _socket_catcher(sockets):
    """An httpcore ``trace`` hook keeping the socket of the connection the request opens."""
    def trace(event, info):
        if event == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            sock = info["return_value"].get_extra_info("socket")
            if sock is not None:
                sockets.append(sock)
    return trace


def _shut(sockets):
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def basic_authorization(parts):
    """``Basic …`` of a URL's ``user:password@`` (percent-decoded, as httpx would send it), or None."""
    if "@" not in parts.netloc:
        return None
    pair = f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password or '')}"
    return f"Basic {base64.b64encode(pair.encode()).decode()}"


def secrets(api_key, parts):
    """What must never be shown or stored: the key; a URL's password, as written and decoded, and the Basic
    token made of it (a server may echo the header)."""
    found = [api_key] if api_key else []
    if parts.password:
        found += [parts.password, urllib.parse.unquote(parts.password)]
    if "@" in parts.netloc:
        found.append(basic_authorization(parts).removeprefix("Basic "))
    return sorted({text for text in found if text}, key=len, reverse=True)


def _key_pattern(keys):
    """Each key as written or as a JSON text spells it, once or nested: each character itself, ``\\uXXXX`` or
    ``\\c``, behind any number of backslashes; None without keys."""
    if not keys:
        return None
    spelled = ("".join(rf"(?:\\*{re.escape(c)}|\\+u{ord(c):04x})" for c in key) for key in keys)
    return re.compile("|".join(spelled), re.IGNORECASE)


def _read_body(response, deadline):
    chunks, size = [], 0
    for chunk in _decoded(response):
        size += len(chunk)
        if size > MAX_BODY:
            raise httpx.DecodingError(f"response body larger than {MAX_BODY} bytes")
        if time.monotonic() >= deadline:
            raise TimeoutError()
        chunks.append(chunk)
    if time.monotonic() >= deadline:
        raise TimeoutError()
    return b"".join(chunks)


def _decoded(response):
    """The body's bytes with its Content-Encoding undone (gzip, deflate, several in a row), in pieces of at
    most DECODE_STEP bytes however much they inflate; an unknown encoding is a decoding error."""
    chunks = response.iter_raw()
    codings = [c.strip().lower() for c in response.headers.get("Content-Encoding", "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding not in _WBITS:
            raise httpx.DecodingError(f"unsupported Content-Encoding {coding!r}")
        if _WBITS[coding] is not None:
            chunks = _inflate(chunks, _WBITS[coding])
    return chunks


_WBITS = {"identity": None, "gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def _inflate(chunks, wbits):
    decoder = zlib.decompressobj(wbits)
    first = True
    try:
        for chunk in chunks:
            if first and wbits == zlib.MAX_WBITS and chunk and chunk[0] & 0x0F != 8:
                decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # "deflate" sent raw, without the zlib header
            first = first and not chunk
            while chunk:
                out = decoder.decompress(chunk, DECODE_STEP)
                if out:
                    yield out
                chunk = decoder.unconsumed_tail
        yield decoder.flush()
    except zlib.error as err:
        raise httpx.DecodingError(f"cannot decode the body ({err})") from None


def _describe(err, timeout):
    if isinstance(err, (TimeoutError, httpx.TimeoutException)):
        return f"no complete reply within {timeout} s"
    return f"{type(err).__name__}: {err}"


def retry_after(value):
    """Seconds from a Retry-After header (seconds or an HTTP date), at most 60; 0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError):
            return 0.0
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if math.isfinite(seconds) else 0.0


def cache_key(identity, task, reference, answer):
    text = json.dumps([identity, task, reference, answer], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def private_identity():
    """For a callable judge without a name: an identity no other call shares (no cache entry is reused)."""
    return f"unnamed-{uuid.uuid4()}"


def load_cache(path):
    """``{key: reply}`` from a JSON Lines cache file (absent file: empty)."""
    cache = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    try:
                        entry = json.loads(line)
                        cache[entry["key"]] = normalise_reply(entry["reply"])
                    except (json.JSONDecodeError, KeyError, TypeError):
                        raise ValueError(f"{path}: line {number}: not a judge cache entry") from None
    return cache


def check_cache_file(path):
    """Before the first request: ``path`` must be a readable cache (or absent) in a folder a file can be
    written to, else a ValueError naming it (not found only after every paid request)."""
    folder = os.path.dirname(os.path.abspath(path))
    problem = None
    if os.path.isdir(path):
        problem = "is a folder, not a file"
    elif os.path.exists(path) and not os.access(path, os.R_OK):
        problem = "cannot be read"
    else:
        try:
            handle, probe = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".check", dir=folder)
        except OSError as err:
            problem = f"cannot be written in {folder} ({err.strerror or err})"
        else:
            os.close(handle)
            os.unlink(probe)
    if problem:
        raise ValueError(f"{path}: judge cache {problem}")
    return load_cache(path)


def save_cache(path, cache):
    """Merge ``cache`` into the file under a lock (a run sharing the file keeps its entries too), written to a
    temporary file beside ``path`` and renamed: ``path`` is whole or untouched."""
    folder = os.path.dirname(os.path.abspath(path))
    with FileLock(os.path.join(folder, f".{os.path.basename(path)}.lock")):
        merged = {**load_cache(path), **cache}
        handle, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                for key, reply in merged.items():
                    f.write(json.dumps({"key": key, "reply": normalise_reply(reply)}, ensure_ascii=False) + "\n")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


def judge_all(items, judge, identity, concurrency=4, cache=None, parse=parse_score, failed=None):
    """Score ``items`` = [(task, reference, answer)] with ``judge``; each distinct item is asked at most once.

    ``identity`` names the judge in the cache keys; ``parse`` reads a grade from a reply; ``failed``, when
    given, holds ``{key: error}`` of the items that failed before: they are not asked again, and the new
    failures are added to it. Returns
    ``(scores, stats)``: one score or None per item (``stats["failures"]``: the indices of failed items), and
    the counts of the run. When the judge cannot work at all (``JudgeConfigError``) the replies already
    received are in ``cache`` before the error is raised.
    """
    cache = {} if cache is None else cache
    failures = {} if failed is None else failed
    keys = [cache_key(identity, *item) for item in items]
    todo = {}
    for key, item in zip(keys, items, strict=True):
        if key not in cache and key not in todo and key not in failures:
            todo[key] = item
    failures.update(_ask(judge, todo, cache, concurrency))
    scores, unparseable = [], []
    for key in keys:
        score = None if key in failures else parse(cache[key])
        if score is None and key not in failures:
            unparseable.append(_mask(judge, str(cache[key]))[:100])
        scores.append(score)
    judged = sum(score is not None for score in scores)
    stats = {
        "judged": judged,
        "unparseable": len(unparseable),
        "failed": sum(key in failures for key in keys),
        "coverage": judged / len(keys) if keys else None,
        "requests": len(todo),
        "cache_hits": len(keys) - len(todo),
        "unparseable_replies": sorted(set(unparseable))[:5],
        "errors": sorted({failures[key] for key in keys if key in failures})[:5],
        "failures": [index for index, key in enumerate(keys) if key in failures],
    }
    return scores, stats


def _ask(judge, todo, cache, concurrency):
    """Fill ``cache`` with the replies to ``todo``; return ``{key: error message}`` of the failed ones."""
    if not todo:  # everything cached (e.g. lm-eval's process_results after the parallel filter): no pool
        return {}
    failures, fatal = {}, None
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {key: pool.submit(judge, *item) for key, item in todo.items()}
        for key, future in futures.items():
            try:
                cache[key] = normalise_reply(future.result())
            except CancelledError:
                continue
            except JudgeConfigError as err:
                if fatal is None:
                    fatal = err
                    pool.shutdown(wait=False, cancel_futures=True)  # the running ones still land in the cache
            except Exception as err:  # a judge callable may raise anything: report it, do not score it
                failures[key] = _mask(judge, f"{type(err).__name__}: {err}")
                logger.warning("limur judge: %s", failures[key])
            except BaseException:  # Ctrl-C: the queued requests are dropped, only the running ones finish
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    if fatal is not None:
        raise fatal
    return failures


def _mask(judge, text):
    return judge.mask(text) if isinstance(judge, Endpoint) else text
