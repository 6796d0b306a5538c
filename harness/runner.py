"""One chaos run end to end: cluster, topic, workload and nemesis, heal, drain, history, check, report.

What decides a run is `RunOptions` (harness.run_options), validated before any container starts.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_chaos.base.errors import UsageError
from kafka_chaos.checkers.check import check_run
from kafka_chaos.cluster.config import elr_default
from kafka_chaos.cluster.kafka_cluster import KafkaCluster
from kafka_chaos.harness import replica_audit, scenarios
from kafka_chaos.harness.live import LiveDisplay
from kafka_chaos.harness.run_options import DEFAULT_RESULTS, RunOptions, chaos_cluster_config  # noqa: F401 (re-exported)
from kafka_chaos.history.meta import RunMeta
from kafka_chaos.history.writer import HistoryWriter
from kafka_chaos.nemesis import schedule_data
from kafka_chaos.nemesis.control import Nemesis
from kafka_chaos.nemesis.schedule import ScheduleRunner
from kafka_chaos.report.page import write_report
from kafka_chaos.workloads.run import Workload, WorkloadConfig

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    run_dir: Path
    exit_code: int                     # 0 valid, 1 violation, 3 no verdict (incomplete drain, interrupted)
    verdict: dict | None
    report: Path | None
    phases: dict[str, float] = field(default_factory=dict)     # seconds per phase: where the time went


def run(options: RunOptions, cluster: KafkaCluster | None = None) -> RunResult:
    """Do the whole run. Faults are healed and (unless reused or kept) the cluster removed on every exit path.

    `cluster`: run on this cluster (the pytest plugin's session cluster) instead of starting or attaching one.
    """

    opts = options.resolved()
    sc = scenarios.scenario(opts.scenario)
    steps = opts.plan()
    display = LiveDisplay(enabled=opts.live if opts.live is not None else sys.stdout.isatty(), banner=opts.banner)
    if cluster is not None:
        if opts.kafka_version and cluster.version != opts.kafka_version:
            raise UsageError(f"the given cluster is Kafka {cluster.version}, not {opts.kafka_version}",
                             "start the cluster with that version")
        owned = False
    else:
        cluster, owned = cluster_for(opts, display)
    _check_cluster_layers(sc, cluster, owned, opts.scenario)
    history = workload = None
    finalized = False
    try:
        topic = scenarios.TOPIC
        display.phase("topic")
        assignment = seeded_assignment(opts.seed, [b.id for b in cluster.brokers], sc.partitions,
                                       sc.replication_factor)
        topic_settings = _fresh_topic(cluster, topic, sc, opts, assignment)
        run_id = opts.run_id or opts.default_run_id()
        meta = RunMeta(
            run_id=run_id, scenario=opts.scenario, seed=opts.seed, command=opts.command(),
            kafka_version=cluster.version, topic=topic, partitions=sc.partitions,
            replication_factor=sc.replication_factor, min_insync_replicas=opts.min_isr,
            unclean_leader_election=opts.unclean, elr_enabled=_elr_enabled(cluster), consumer_mode=opts.consumer_mode,
            producers=tuple(p.to_meta() for p in opts.profiles()), broker_settings=cluster.config.changed_settings(),
            topic_settings=topic_settings,
            duration_s=opts.duration_s, brokers=tuple(n.id for n in cluster.brokers),
            controllers=tuple(n.id for n in cluster.controllers),
            metadata_mode=cluster.metadata_mode, zookeeper=tuple(n.id for n in cluster.zookeepers),
            fault_plan=tuple({"start_s": s.start_s, "fault": s.fault.name, "heal_s": s.heal_s} for s in steps),
            extra=dict(opts.extra_meta) | {"replica_assignment": assignment})
        history = HistoryWriter.create(opts.results, run_id, meta)
        schedule_data.write(history.dir / schedule_data.SCHEDULE_FILE, steps, opts.scenario, opts.seed,
                            opts.duration_s)
        workload = _workload(cluster, history, opts, topic, assignment, topic_settings)
        nemesis = Nemesis(cluster, history.record_fault, consumers=workload.group_members())
        faults = ScheduleRunner(nemesis, steps)
        display.phase("workload")
        workload.start()
        history.update_meta(start_ns=time.time_ns())
        try:
            faults.start()
            display.watch(cluster, topic, workload, nemesis, opts.duration_s)
        finally:
            display.phase("heal")
            if opts.check and opts.engine == "spark":
                _warm_spark()
            faults.stop()
            workload.stop()
            history.update_meta(end_ns=time.time_ns())
        if faults.failures:
            history.update_meta(fault_failures=[f"{s.fault.name} at {s.start_s}s: {why}" for s, why in faults.failures])
        display.phase("drain")
        drain = workload.final_drain()
        history.update_meta(drain={"healthy": drain.healthy, "incomplete": drain.incomplete,
                                   "ends": {str(k): v for k, v in drain.ends.items()}, "records": drain.records,
                                   **({"stuck": {str(k): v for k, v in drain.stuck.items()}} if drain.stuck else {})})
        display.phase("audit")
        history.update_meta(replica_audit=replica_audit.run_audit(cluster, history.dir, topic))
        display.phase("history")
        summary = workload.finalize()
        finalized = True
        log.info("history: %s", summary)
    except BaseException as e:
        if workload is not None and not finalized:
            # interrupted or failed: what was recorded until now still becomes a readable history
            try:
                history.update_meta(interrupted=f"{type(e).__name__}: {e}")
                workload.finalize()
            except Exception as fe:
                log.warning("could not finalize the history (kafka-chaos history repair %s): %s", history.dir, fe)
        raise
    finally:
        if history is not None:
            display.phase("logs")
            cluster.save_logs(history.dir / "logs")
        if owned and not opts.keep_cluster:
            display.phase("down")
            cluster.down()
        elif owned:
            log.info("cluster %s kept up: reuse it with --reuse-cluster --name %s, remove it with "
                     "`kafka-chaos cluster down --name %s`", cluster.config.name, cluster.config.name,
                     cluster.config.name)
    return _judge(history.dir, opts, display)


def _workload(cluster, history, opts: RunOptions, topic: str, assignment, topic_settings: dict) -> Workload:
    """The run's workload: producers and readers, or the exactly-once processors (--workload eos)."""
    config = WorkloadConfig(topic=topic, producers=opts.profiles(), consumers=opts.consumers,
                            consumer_clients=opts.clients(), consumer_mode=opts.consumer_mode, commit=opts.commit)
    if opts.workload != "eos":
        return Workload(cluster, history, config)
    from kafka_chaos.workloads.eos_run import EosConfig, EosWorkload

    per_partition = int((opts.rate or 2000.0) * opts.duration_s / len(assignment)) + 1
    return EosWorkload(cluster, history, config, EosConfig(
        records_per_partition=per_partition, rate=opts.rate, seed=opts.seed, clients=opts.clients(),
        processors=1 if opts.client == "both" else 2,      # fewer than the 3 partitions: transactions span several
        replica_assignment=tuple(tuple(r) for r in assignment), topic_settings=tuple(topic_settings.items())))


def _warm_spark() -> None:
    """Start the checker's Spark session while faults heal and the drain reads: its JVM start (~15 s here) then
    overlaps them instead of following them. Not earlier: it must not steal the brokers' CPU during the faults."""
    import threading

    def start():
        try:
            from kafka_chaos.checkers.spark import get_spark

            t0 = time.monotonic()
            get_spark()
            log.info("Spark session ready after %.1f s of warm-up", time.monotonic() - t0)
        except Exception as e:           # the check itself reports a Spark problem properly
            log.debug("warming Spark failed: %s", e)

    threading.Thread(target=start, name="spark-warmup", daemon=True).start()


def _check_cluster_layers(sc: scenarios.Scenario, cluster: KafkaCluster, owned: bool, name: str) -> None:
    """A scenario that needs the power-loss layer or the link proxy refuses a given cluster started without it."""
    needs = [(flag, what) for key, flag, what in (
        ("power_loss_fs", "--power-loss-fs", "the brokers' log dirs on the power-loss layer"),
        ("link_proxy", "--link-proxy", "its links through the link proxy"))
        if sc.cluster_overrides.get(key) and not getattr(cluster.config, key)]
    if needs:
        flag, what = needs[0]
        if owned:
            cluster.down()
        raise UsageError(f"{name} needs {what}; cluster {cluster.config.name} was started without it",
                         f"drop --reuse-cluster (the run starts its own cluster with it), or start the cluster with "
                         f"{flag}")


def cluster_for(opts: RunOptions, display: LiveDisplay) -> tuple[KafkaCluster, bool]:
    """(cluster, whether the caller owns it): the running one with --reuse-cluster, else a new one."""
    if opts.reuse_cluster:
        try:
            cluster = KafkaCluster.attach(opts.cluster_name)
            if opts.kafka_version and cluster.version != opts.kafka_version:
                raise UsageError(f"the running cluster '{opts.cluster_name}' is Kafka {cluster.version}, "
                                 f"not {opts.kafka_version}", "drop --reuse-cluster or --kafka-version")
            opts.cluster.check_matches(cluster.config)
            return cluster, False
        except UsageError as e:
            if "no cluster named" not in e.cause:
                raise
            log.info("no running cluster '%s' to reuse: starting one that stays up", opts.cluster_name)
    display.phase("cluster up")
    # A cluster that is to outlive the run (--reuse-cluster, --keep-cluster) takes --name and no watchdog: with one,
    # it would be removed once this process exits, and under a drawn name nobody could find it to reuse or remove.
    outlives = opts.reuse_cluster or opts.keep_cluster
    cluster = KafkaCluster(opts.cluster_config(opts.cluster_name if outlives else
                                               f"run{int(time.time() * 1000) % 10_000_000}"),
                           persistent=outlives)
    with display.setup_steps():             # jars and image, drawn when they have to be made
        cluster.up()
    return cluster, not opts.reuse_cluster


def _fresh_topic(cluster: KafkaCluster, topic: str, sc: scenarios.Scenario, opts: RunOptions,
                 assignment: list[list[int]] | None = None) -> dict[str, str]:
    """Create the chaos topic afresh; returns the configs it was given (meta.json's topic_settings)."""
    if topic in cluster.topics():
        cluster.delete_topics([topic])
    configs = opts.topic_settings(cluster.config.topic_settings)
    cluster.create_topic(topic, sc.partitions, sc.replication_factor, configs=configs, timeout=60,
                         replica_assignment=assignment)
    return configs


def seeded_assignment(seed: int, brokers: list[int], partitions: int, replication_factor: int) -> list[list[int]]:
    """Each partition's replicas (preferred leader first), drawn from the seed: Kafka's own placement is random
    (StripedReplicaPlacer starts at a random rack/broker), so without this a replay of the same seed would aim
    `leader-*` faults and seeded splits at a different layout. Striped like Kafka's: one leader per broker in turn."""
    import random

    order = sorted(brokers)
    random.Random(f"{seed}/assignment").shuffle(order)
    return [[order[(p + i) % len(order)] for i in range(replication_factor)] for p in range(partitions)]


def _elr_enabled(cluster: KafkaCluster) -> bool:

    if cluster.metadata_mode == "zookeeper":
        return False
    return cluster.config.elr if cluster.config.elr is not None else elr_default(cluster.version)


def _judge(run_dir: Path, opts: RunOptions, display: LiveDisplay) -> RunResult:
    import json

    if not opts.check:
        display.done()
        return RunResult(run_dir, 0, None, None, display.durations())

    display.phase("check")
    code = check_run(run_dir, force=True, engine=opts.engine, settings=opts.check_settings())
    display.phase("report")
    report = write_report(run_dir)
    verdict_file = run_dir / "verdict.json"
    verdict = json.loads(verdict_file.read_text()) if verdict_file.exists() else None
    display.done()
    return RunResult(run_dir, code, verdict, Path(report), display.durations())


def summary_lines(result: RunResult) -> list[str]:
    v = result.verdict or {}
    lines = [f"results: {result.run_dir}"]
    if v:
        if v.get("valid") is None:
            state = "NO VERDICT: the run could not be judged (" + "; ".join(
                _incomplete_reasons(v.get("incomplete") or {})) + ")"
        else:
            state = "VALID" if v.get("valid") else "VIOLATION: " + ", ".join(
                f"{k}={n}" for k, n in (v.get("violations") or {}).items())
        c = v.get("counts", {})
        lines.append(f"verdict: {state}")
        lines.append(f"sends {c.get('sends')} (ok {c.get('ok')}, fail {c.get('fail')}, info {c.get('info')}); "
                     f"reads {c.get('reads')}; lost {v.get('anomalies', {}).get('lost')} "
                     f"(model: acked loss {v.get('predicted', {}).get('lost')}); lost after read "
                     f"{v.get('anomalies', {}).get('lost_after_read')}; longest stall "
                     f"{(v.get('availability') or {}).get('longest_s', 0):.1f} s; model disagreements "
                     f"{len(v.get('model_disagreements') or [])}")
        for client, row in (v.get("clients") or {}).items():
            lines.append(f"  {client} {row.get('version') or ''}: sends {row['sends']}, acked {row['acked']}, "
                         f"lost {row['lost']}, duplicates {row['duplicates']}, longest stall "
                         f"{row['longest_stall_s']:.1f} s")
    failed = _fault_failures(result.run_dir)
    if failed:
        lines.append(f"WARNING: {len(failed)} scheduled fault(s) did not start, so this run did not test them: "
                     + "; ".join(failed))
    if result.report:
        lines.append(f"report: {result.report}")
    return lines


def _fault_failures(run_dir: Path) -> list[str]:
    try:
        return list(json.loads((Path(run_dir) / "meta.json").read_text()).get("fault_failures") or [])
    except (OSError, ValueError):
        return []


def _incomplete_reasons(incomplete: dict) -> list[str]:
    parts = list(incomplete.get("run") or [])
    by_reason: dict[str, list[str]] = {}
    for p, why in (incomplete.get("partitions") or {}).items():
        by_reason.setdefault(why, []).append(p)
    parts += [f"partitions {', '.join(ps)}: {why}" for why, ps in by_reason.items()]
    return parts
