"""`kafka-chaos run SCENARIO ...` and `kafka-chaos scenarios`."""
from __future__ import annotations

import argparse
from pathlib import Path

from kafka_chaos.harness import scenarios
from kafka_chaos.harness.cluster_options import ClusterChoice, add_cluster_options
from kafka_chaos.harness.run_options import chaos_cluster_config
from kafka_chaos.history.schema import ACKS_CHOICES, ACKS_LEVELS, acks_level


def register(sub) -> None:
    p = sub.add_parser("scenarios", help="list the fault scenarios")
    p.set_defaults(func=_cmd_scenarios)

    p = sub.add_parser("run", help="run a fault scenario end to end: cluster, workload, faults, check, report",
                       description="Exit 0 when the run is valid, 1 on a violation (something the ISR model says "
                                   "cannot happen), 2 on bad input or a broken environment. The cluster options are "
                                   "`cluster up`'s, with a chaos run's faster fault detection as defaults.")
    p.add_argument("scenario", metavar="SCENARIO", nargs="?",
                   help="see `kafka-chaos scenarios` (may be left out with --schedule: the file's scenario)")
    p.add_argument("--schedule", type=Path, metavar="FILE",
                   help="play this fault schedule (JSON, as every run writes to schedule.json) instead of the "
                        "scenario's; the scenario still gives the topic's shape")
    p.add_argument("--duration", type=float, help="seconds of workload (default: the scenario's, 60)")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="run the scenario N times with seeds seed..seed+N-1 on one cluster and one Spark session, "
                        "then print the table of verdicts (exit: the worst run's)")
    p.add_argument("--reuse-cluster", action="store_true",
                   help="use the running cluster (`kafka-chaos cluster up`), or start one that stays up")
    p.add_argument("--keep-cluster", action="store_true",
                   help="leave the run's cluster up at the end, named --name (remove it: kafka-chaos cluster down)")
    p.add_argument("--name", default="kafka-chaos", help="cluster name for --reuse-cluster and --keep-cluster")
    add_workload_options(p)
    p.add_argument("--no-check", dest="check", action="store_false", help="skip the check and the report")
    add_cluster_options(p, chaos_cluster_config("run"))      # the same as `cluster up`'s
    from kafka_chaos.checkers.cli import add_engine_option, add_judgement_options
    add_engine_option(p)
    add_judgement_options(p)
    p.set_defaults(func=_cmd_run)


def add_workload_options(p) -> None:
    """What the workload does (shared by `run` and `soak`, so both reach options_from_args with every field)."""
    p.add_argument("--acks", default="all", type=_acks, choices=ACKS_LEVELS, metavar="{" + ",".join(ACKS_LEVELS) + "}",
                   help="producer acks (default all; -1, Kafka's other spelling of all, is taken too)")
    p.add_argument("--idempotence", action=argparse.BooleanOptionalAction, default=None,
                   help="enable.idempotence (default: on for acks=all)")
    p.add_argument("--rate", type=float, default=2000.0, help="sends per second (0: as fast as possible)")
    p.add_argument("--seed", type=int, help="seed of the fault schedule (default: drawn and recorded)")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="results root (default results/); s3://bucket/prefix: journal locally, upload at the end, "
                        "each run's completion marker last (docs/results-index.md)")
    p.add_argument("--client", choices=("librdkafka", "java", "both"), default="librdkafka",
                   help="the client library that writes and reads live: librdkafka (confluent-kafka), java (Kafka's "
                        "own kafka-clients of the release), or both side by side with the same profile")
    p.add_argument("--consumer-mode", choices=("assign", "subscribe"), default="assign",
                   help="live consumers: assign (each reads every partition, no commits) or subscribe (one consumer "
                        "group that commits offsets and rebalances while the faults run)")
    p.add_argument("--commit", choices=("auto", "manual"), default="manual",
                   help="subscribe mode's offset commits: auto (the client's own auto commit) or manual (after each "
                        "journal flush and on revocation; default)")
    p.add_argument("--consumers", type=int, default=None,
                   help="live consumers per client (default: 1; 3 in subscribe mode, so the group rebalances)")
    p.add_argument("--transactions", action="store_true",
                   help="a transactional producer (each --client's, transactional.id): transactions over every "
                        "partition, every 4th aborted on purpose; read_committed consumers must never see an aborted "
                        "one")
    p.add_argument("--workload", choices=("produce", "eos"), default="produce",
                   help="produce (default: producers and live readers of the topic) or eos (exactly-once: processors "
                        "in one group read a seeded input topic and write the topic in transactions that commit "
                        "their offsets; consumer-kill kills processors)")


def _acks(text: str) -> str:
    """--acks as a level of history.schema.ACKS_LEVELS, refused here with cause and remedy (exit 2): argparse's
    `choices` then lists the levels in --help."""
    try:
        return acks_level(text)
    except ValueError:
        from kafka_chaos.base.errors import UsageError
        raise UsageError(f"--acks {text}: not one of {', '.join(ACKS_CHOICES)} (-1 is Kafka's other spelling of "
                         "all)", "use --acks 0, 1 or all") from None


def _cmd_scenarios(args) -> int:
    width = max(len(n) for n in scenarios.CATALOG)
    for s in scenarios.CATALOG.values():
        print(f"{s.name:<{width}}  {s.description}")
    return 0


def options_from_args(args):
    """RunOptions from `run`'s parsed arguments (also how replay rebuilds a run from its recorded command)."""
    from kafka_chaos.base.errors import UsageError
    from kafka_chaos.cluster.settings import parse_settings
    from kafka_chaos.harness.run_options import RunOptions

    if not args.scenario and not args.schedule:
        raise UsageError("run needs a SCENARIO or a --schedule FILE", "see `kafka-chaos scenarios`")
    return RunOptions(
        scenario=args.scenario, acks=args.acks, min_isr=args.min_isr, idempotence=args.idempotence,
        unclean=args.unclean, kafka_version=args.kafka_version, duration_s=args.duration,
        rate=args.rate or None, seed=args.seed, results=args.results, reuse_cluster=args.reuse_cluster,
        cluster_name=args.name, keep_cluster=args.keep_cluster, check=args.check,
        stall_threshold_s=args.stall_threshold, max_stall_s=args.max_stall, engine=args.engine,
        cluster=ClusterChoice.from_args(args), client=args.client, consumer_mode=args.consumer_mode,
        commit=args.commit, transactions=args.transactions, workload=getattr(args, "workload", "produce"),
        consumers=args.consumers if args.consumers is not None else (3 if args.consumer_mode == "subscribe" else 1),
        topic_config=parse_settings(args.topic_config, "--topic-config"), schedule_file=args.schedule,
    )


def _cmd_run(args) -> int:
    from kafka_chaos.harness.matrix import is_matrix, run_matrix
    from kafka_chaos.harness.runner import run, summary_lines
    from kafka_chaos.history.objstore import location

    if location(args.results):              # s3://bucket/prefix: a local staging root, uploaded at the end
        from kafka_chaos.harness.s3_results import run_into_bucket

        return run_into_bucket(args, _cmd_run)

    opts = options_from_args(args)
    if is_matrix(args.kafka_version):       # 2.8.2,3.9.2,4.4.0: the version matrix
        if args.repeat is not None:
            from kafka_chaos.base.errors import UsageError
            raise UsageError("--repeat and a list of releases do not combine", "give one of them")
        return run_matrix(opts, args.kafka_version)[0]
    if args.repeat is not None:
        from kafka_chaos.harness.repeat import run_repeated

        return run_repeated(opts, args.repeat).exit_code
    result = run(opts)
    for line in summary_lines(result):
        print(line)
    return result.exit_code
