"""A double of the Hugging Face Hub on 127.0.0.1 answering, over real HTTP, the endpoints huggingface_hub's
``HfApi`` and ``datasets.load_dataset`` call (as huggingface_hub 2.x calls them: hf_api.py, _commit_api.py,
file_download.py, hf_file_system.py): repo create and info (with ``expand=evalResults``), validate-yaml,
preupload, commit (files added and deleted; to a branch or an open pull request's ``refs/pr/N``, or
``create_pr=1``: a new pull request ``refs/pr/N``), the list of discussions (pull requests), tree, paths-info, and
resolve (GET and HEAD). A repo is private as created (``private``); ``failing`` commits answer 500. Every file is a regular git blob (preupload says so), so no LFS or Xet transfer happens.

Point huggingface_hub at it with ``HF_ENDPOINT`` (read at import: set it in a subprocess's environment, or patch
``huggingface_hub.constants.ENDPOINT``) and a token of ``tokens``.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlparse

import yaml

PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}
API_REPO = re.compile(r"^/api/(models|datasets|spaces)/([^/]+/[^/]+)(?:/(.*))?$")
RESOLVE = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


@dataclass
class Repo:
    kind: str
    repo_id: str
    branches: dict = field(default_factory=lambda: {"main": {}})  # ref -> {path: bytes}
    commits: list = field(default_factory=list)  # (ref, summary, [paths])
    pulls: list = field(default_factory=list)  # refs/pr/N, in order
    deleted: list = field(default_factory=list)  # (ref, path) of every file a commit deleted
    titles: dict = field(default_factory=dict)  # refs/pr/N -> its title (the commit message that opened it)
    private: bool = False
    failing: bool = False  # every commit answers 500 (the Hub down half-way through a push)

    def ref(self, revision: str) -> str:
        """The branch a revision names: a branch, or the sha of a branch's head."""
        if revision in self.branches:
            return revision
        return next(ref for ref in self.branches if self.sha(ref) == revision)

    def sha(self, ref: str) -> str:
        files = self.branches[ref]
        digest = hashlib.sha1(ref.encode())
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + files[path])
        return digest.hexdigest()


class HubDouble:
    """``tokens``: ``{token: set of repo ids it may write}``; any valid token may open a pull request on a repo
    it can see, as on the Hub. ``requests``: every (method, path) received."""

    def __init__(self, tokens: dict):
        self.tokens = tokens
        self.repos: dict[tuple, Repo] = {}
        self.requests: list = []
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                double.answer(self, "GET")

            def do_HEAD(self):
                double.answer(self, "HEAD")

            def do_POST(self):
                double.answer(self, "POST")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    def add_repo(self, kind: str, repo_id: str, files=None) -> Repo:
        repo = self.repos[(kind, repo_id)] = Repo(kind, repo_id)
        repo.branches["main"].update(files or {})
        return repo

    # --- dispatch

    def answer(self, handler, method):
        url = urlparse(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        self.requests.append((method, url.path))
        token = (handler.headers.get("Authorization") or "").removeprefix("Bearer ").strip() or None
        query = parse_qs(url.query)
        try:
            status, headers, payload = self.route(method, url.path, query, body, token, handler.headers)
        except (KeyError, StopIteration) as err:  # an unknown repo, branch or revision
            status, headers, payload = 404, {"X-Error-Code": "RevisionNotFound"}, {"error": f"not found: {err!r}"}
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        if not isinstance(payload, bytes):
            handler.send_header("Content-Type", "application/json")
        if status >= 400 and isinstance(payload, dict):
            handler.send_header("X-Error-Message", payload.get("error", ""))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(data)

    def route(self, method, path, query, body, token, headers):
        if token is not None and token not in self.tokens:
            return 401, {}, {"error": "Invalid credentials in Authorization header"}
        if path == "/api/repos/create" and method == "POST":
            return self.create(json.loads(body), token)
        if path == "/api/validate-yaml" and method == "POST":
            content = json.loads(body)["content"]
            yaml.safe_load(content.split("---")[1])  # an unreadable card is a 500 here, as a bug of ours should be
            return 200, {}, {"errors": [], "warnings": []}
        found = RESOLVE.match(path)
        if found and method in ("GET", "HEAD"):
            kind = {"datasets": "dataset", "spaces": "space", None: "model"}[found[1]]
            if (kind, found[2]) not in self.repos:
                return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
            return self.resolve(self.repos[(kind, found[2])], unquote(found[3]), unquote(found[4]),
                                headers.get("Range"))
        found = API_REPO.match(path)
        if not found:
            return 404, {}, {"error": f"no route {method} {path}"}
        kind, repo_id, rest = found[1][:-1], found[2], found[3] or ""
        if (kind, repo_id) not in self.repos:  # as the Hub says it: huggingface_hub's RepositoryNotFoundError
            return 404, {"X-Error-Code": "RepoNotFound"}, {"error": "Repository not found"}
        return self.repo_route(self.repos[(kind, repo_id)], method, path, rest, query, body, token)

    def repo_route(self, repo, method, path, rest, query, body, token):
        """The endpoints of one repo, ``rest`` the path after /api/<kind>s/<org>/<name>/."""
        action, _, tail = rest.partition("/")
        if method == "GET" and action in ("", "revision"):
            return 200, {}, self.info(repo, repo.ref(unquote(tail) if action else "main"), query)
        if method == "GET" and action == "discussions":
            return 200, {}, self.discussions(repo, query)
        if method == "GET" and action == "tree":
            ref, _, inside = tail.partition("/")
            recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
            return self.tree(repo, repo.ref(unquote(ref)), unquote(inside), recursive)
        if method == "POST" and action == "paths-info":
            paths = parse_qs(body.decode())["paths"]
            files = repo.branches[repo.ref(unquote(tail))]
            return 200, {}, [self.entry(p, files[p]) for p in paths if p in files]
        if method == "POST" and action == "preupload":
            if token is None:
                return 401, {}, {"error": "no token"}
            return 200, {}, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                       for f in json.loads(body)["files"]]}
        if method == "POST" and action == "commit":
            return self.commit(repo, unquote(tail), body, token, query.get("create_pr") == ["1"])
        return 404, {}, {"error": f"no route {method} {path}"}

    # --- endpoints

    def create(self, payload, token):
        repo_id = f"{payload['organization']}/{payload['name']}"
        kind = payload.get("type") or "model"
        if token is None or repo_id not in self.tokens[token]:
            return 403, {}, {"error": "You don't have the rights to create this repo"}
        if (kind, repo_id) in self.repos:
            return 409, {}, {"error": "You already created this repo", "url": self.repo_url(kind, repo_id)}
        # huggingface_hub 1.x sends "visibility" (earlier: "private")
        self.add_repo(kind, repo_id).private = payload.get("visibility") == "private" or payload.get("private") is True
        return 200, {}, {"url": self.repo_url(kind, repo_id)}

    def repo_url(self, kind, repo_id):
        return f"{self.url}/{PREFIX[kind]}{repo_id}"

    def info(self, repo, ref, query):
        files = repo.branches[ref]
        found = {"id": repo.repo_id, "_id": repo.repo_id, "sha": repo.sha(ref), "private": repo.private,
                 "siblings": [{"rfilename": p} for p in sorted(files)], "tags": []}
        if "evalResults" in query.get("expand", []) or "evalResults" in query.get("expand[]", []):
            found = {"id": repo.repo_id, "_id": repo.repo_id,
                     "evalResults": [{"filename": p, "data": e} for p in sorted(files)
                                     if p.startswith(".eval_results/") for e in yaml.safe_load(files[p])]}
        return found

    def discussions(self, repo, query):
        """Its pull requests, all open (the double merges and closes none), as the Hub lists them."""
        if query.get("type", ["all"])[0] not in ("all", "pull_request") or query.get("p", ["0"])[0] != "0":
            return {"discussions": [], "count": 0, "start": 0}
        found = [{"num": int(ref.rsplit("/", 1)[1]), "title": repo.titles[ref], "status": "open",
                  "author": {"name": "qahub-tests"}, "createdAt": "2026-01-01T00:00:00.000Z",
                  "repo": {"name": repo.repo_id, "type": repo.kind}, "isPullRequest": True} for ref in repo.pulls]
        return {"discussions": found, "count": len(found), "start": 0}

    def entry(self, path, body):
        return {"type": "file", "path": path, "size": len(body), "oid": hashlib.sha1(body).hexdigest()}

    def tree(self, repo, ref, inside, recursive):
        files = repo.branches[ref]
        prefix = f"{inside.rstrip('/')}/" if inside else ""
        entries, folders = [], set()
        for path in sorted(files):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix):].split("/")
            if len(parts) > 1 and not recursive:  # a file deeper down: its first folder only
                folders.add(prefix + parts[0])
                continue
            for depth in range(1, len(parts)):
                folders.add(prefix + "/".join(parts[:depth]))
            entries.append(self.entry(path, files[path]))
        entries += [{"type": "directory", "path": f, "oid": hashlib.sha1(f.encode()).hexdigest()}
                    for f in sorted(folders)]
        if not entries and inside:
            return 404, {}, {"error": "Entry not found"}
        return 200, {}, entries

    def resolve(self, repo, revision, path, wanted):
        ref = repo.ref(revision)
        files = repo.branches[ref]
        if path not in files:
            return 404, {"X-Error-Code": "EntryNotFound"}, {"error": "Entry not found"}
        body = files[path]
        headers = {"X-Repo-Commit": repo.sha(ref), "ETag": f'"{hashlib.sha1(body).hexdigest()}"',
                   "Accept-Ranges": "bytes"}
        found = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted or "")
        if not found:
            return 200, headers, body
        start = int(found[1]) if found[1] else max(len(body) - int(found[2]), 0)
        end = int(found[2]) if found[1] and found[2] else len(body) - 1
        headers["Content-Range"] = f"bytes {start}-{min(end, len(body) - 1)}/{len(body)}"
        return 206, headers, body[start:end + 1]

    def commit(self, repo, ref, body, token, create_pr):
        if token is None:
            return 401, {}, {"error": "no token"}
        if repo.failing:
            return 500, {}, {"error": "Internal Error - We're working hard to fix this as soon as possible!"}
        if not create_pr and not ref.startswith("refs/pr/") and repo.repo_id not in self.tokens[token]:
            return 403, {}, {"error": "You don't have the rights to write to this repo; open a pull request"}
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        header = next(item["value"] for item in lines if item["key"] == "header")
        added, files = {}, dict(repo.branches[ref])
        for item in lines:
            if item["key"] == "file":
                added[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            elif item["key"] in ("deletedFile", "deletedFolder"):  # as the Hub: a path that is not there is an error
                path = item["value"]["path"]
                gone = [p for p in files if p == path or item["key"] == "deletedFolder" and p.startswith(path)]
                if not gone:
                    return 404, {}, {"error": f"cannot delete {path}: no such file"}
                for found in gone:
                    del files[found]
            elif item["key"] != "header":
                return 400, {}, {"error": f"the double takes regular files and deletions only, not {item['key']}"}
        deleted = sorted(set(repo.branches[ref]) - set(files))
        pr_url = None
        if create_pr:
            ref_name = f"refs/pr/{len(repo.pulls) + 1}"
            repo.branches[ref_name] = dict(repo.branches[ref])
            repo.pulls.append(ref_name)
            repo.titles[ref_name] = header["summary"]
            ref = ref_name
            pr_url = f"{self.repo_url(repo.kind, repo.repo_id)}/discussions/{len(repo.pulls)}"
        repo.branches[ref] = {**files, **added}
        repo.deleted += [(ref, path) for path in deleted]
        repo.commits.append((ref, header["summary"], sorted(added)))
        sha = repo.sha(ref)
        return 200, {}, {"commitUrl": f"{self.repo_url(repo.kind, repo.repo_id)}/commit/{sha}", "commitOid": sha,
                         "pullRequestUrl": pr_url}
