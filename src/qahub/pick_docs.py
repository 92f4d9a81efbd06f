"""``qahub pick-docs TASK --n N --location LOCATION [--seed S]``: N documents of a task spread over its clusters
(a document of every conversation before a second of any), printed as the ids each harness selects documents by:
lm-eval's ``--samples`` (``{task: [document index]}``) and inspect's ``--sample-id`` (the task's document ids,
comma-separated), and for lighteval ``QAHUB_LIGHTEVAL_SAMPLES`` (read by ``qahub.lighteval_tasks``: lighteval
0.13's own ``--max-samples N`` takes N documents it shuffles with its own seed)."""

from __future__ import annotations

import json
import random
import shlex

PREFIX = "qahub_"  # lm-eval's qahub_limur is inspect's qahub/limur


def add_arguments(parser):
    parser.add_argument("task", help="the task (qahub_limur, or inspect's limur)")
    parser.add_argument("--n", type=int, required=True, help="how many documents")
    parser.add_argument("--location", required=True, help="the export folder or Hub dataset id the runs read")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


def main(args) -> int:
    task = args.task if args.task.startswith(PREFIX) else PREFIX + args.task
    picked, docs, clusters = pick(task, args.n, args.location, args.seed)
    spread = f", {len({c for _, _, c in picked if c is not None})} of {clusters} clusters" if clusters else ""
    print(f"{task}: {len(picked)} of {docs} documents{spread} (seed {args.seed})")
    samples = shlex.quote(json.dumps({task: [index for index, _, _ in picked]}))
    print("lm_eval --samples " + samples)
    ids = [str(doc_id) for _, doc_id, _ in picked]
    if any("," in i for i in ids):
        print("inspect: a document id holds a comma, which --sample-id cannot list")
    else:
        print(f"inspect eval qahub/{task.removeprefix(PREFIX)} --sample-id " + shlex.quote(",".join(ids)))
    print(f"QAHUB_LIGHTEVAL_SAMPLES={samples} python -m qahub.lighteval_tasks accelerate ... (no --max-samples)")
    return 0


def pick(task: str, n: int, location, seed: int = 0, at_most: bool = False) -> tuple[list, int, int]:
    """``[(document index, document id, cluster)]`` of ``n`` documents of ``task`` at ``location`` (in index
    order), the number of documents and of clusters (0: the task declares none). The clusters are visited in a
    seeded random order, one document of each in turn. A task with fewer than ``n`` documents is an error, or,
    with ``at_most``, gives them all (the same as asking for exactly that many)."""
    from qahub import planning, tasks

    corpus = tasks.task_corpora().get(task)
    if corpus is None:
        raise planning.HarnessError(f"{task}: no such task (tasks: {', '.join(tasks.task_corpora())})")
    if n < 1:
        raise planning.HarnessError(f"--n {n}: must be 1 or more")
    spec = planning.task_api(corpus).TASKS[task]
    entry = planning.plan_tasks(corpus, location)[task]
    functions = planning.task_functions(corpus, task, entry["location"], config=entry["config"],
                                       splits=(entry["split"],))
    rows = functions.dataset()[entry["split"]]
    docs = list(functions.process_docs(rows) if spec.docs else rows)
    if n > len(docs) and not at_most:
        raise planning.HarnessError(f"--n {n}: {entry['location']} has {len(docs)} documents of {task}")
    rnd = random.Random(seed)
    groups = {}
    for index, doc in enumerate(docs):
        key = spec.cluster(doc) if spec.cluster else None
        groups.setdefault(index if key is None else ("cluster", key), []).append(index)
    order = list(groups.values())
    rnd.shuffle(order)
    for members in order:
        rnd.shuffle(members)
    chosen = sorted([members[turn] for turn in range(max(map(len, order))) for members in order
                     if turn < len(members)][:n])
    cluster_count = len({key for key in groups if isinstance(key, tuple)})
    return ([(i, tasks.document_id(spec, docs[i], i), spec.cluster(docs[i]) if spec.cluster else None)
             for i in chosen], len(docs), cluster_count)
