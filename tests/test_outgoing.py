"""``qahub.outgoing.clean``: what every file ``qahub publish-results`` pushes goes through (issue 42 item 4). Main
pushed ``model_args`` with ``token=hf_...``, URLs with a password and the runs' absolute paths verbatim."""

import io
import json
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq

from qahub.outgoing import Local, clean, leak, roots_of

HOME = "/home/alice"
RUN = f"{HOME}/projects/secret-project/runs/half"


def local():
    moved = {f"{RUN}/results_1.json": "runs/half/results_1.json", RUN: "runs/half", f"{HOME}/reports/out": "."}
    return Local(moved, roots_of([f"{RUN}/results_1.json"]) + [HOME])


def test_credentials_are_redacted_by_key_name_and_url_user_info_in_strings_and_objects():
    record = {"model_args": "pretrained=org/m,token=hf_PLANTEDtoken0123456789,trust_remote_code=True",
              "config": {"api_key": "sk-PLANTED", "endpoint": "https://bob:hunter2@mirror.example/v1",
                         "db": {"password": "hunter3", "use_auth_token": True}},
              "kept": {"max_tokens": 5, "tokenizer": "org/m", "max_gen_toks": 8, "author": "alice smith"}}
    body = clean("runs/half/results_1.json", json.dumps(record).encode(), local())
    found = json.loads(body)
    assert found["model_args"] == "pretrained=org/m,token=***,trust_remote_code=True"
    assert found["config"] == {"api_key": "***", "endpoint": "https://***@mirror.example/v1",
                               "db": {"password": "***", "use_auth_token": True}}
    assert found["kept"] == record["kept"]  # "tokens", "tokenizer", "author" are no secrets


def test_local_paths_become_the_repo_s_or_their_last_component():
    text = (f"read {RUN}/results_1.json from {RUN}; figure {HOME}/reports/out/figures/a.png; "
            f"model pretrained={HOME}/models/deep/er/my-model; export /data/corpora/limur; home {HOME} ")
    found = clean("report/report.md", text.encode(), local()).decode()
    assert found == ("read runs/half/results_1.json from runs/half; figure ./figures/a.png; model "
                     "pretrained=my-model; export limur; home [local folder] ")
    assert leak("report/report.md", found.encode(), local()) is None
    assert leak("report/report.md", text.encode(), local()).startswith(f"a local path ({HOME}")


def test_what_only_looks_like_a_path_or_secret_is_left_alone():
    text = ("https://host/home/a/b hf://datasets/org/x 2024/05/01 and/or </td></tr> "
            "data:image/png;base64,AAA+/home/xx/AAA/+auth=")
    assert clean("report/report.html", text.encode(), local()).decode() == text


def test_parquet_values_and_zipped_log_members_are_cleaned():
    table = pa.table({"prompt": [f"see {HOME}/x/y.txt", "plain"], "n": [1, 2]})
    out = io.BytesIO()
    pq.write_table(table, out)
    cleaned = pq.read_table(io.BytesIO(clean("data/half/t.parquet", out.getvalue(), local())))
    assert cleaned.column("prompt").to_pylist() == ["see y.txt", "plain"] and cleaned.schema == table.schema
    log = io.BytesIO()
    with zipfile.ZipFile(log, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"model_args": {"api_key": "sk-X"}, "task_file": f"{RUN}/t.py"}))
    with zipfile.ZipFile(io.BytesIO(clean("runs/half/log.eval", log.getvalue(), local()))) as archive:
        assert json.loads(archive.read("header.json")) == {"model_args": {"api_key": "***"},
                                                           "task_file": "runs/half/t.py"}
