"""kafka-chaos nemesis: faults with start/heal aimed at live roles, and seeded schedules.

Public API (for the runner and the scenario catalog):
  registry.names(), registry.build(name, FaultArgs(...))          every fault by name, with a one-line description
  schedule.once / sequence / stagger / mix, schedule.spec(name, **args)   seeded plans: .plan(seed, duration_s)
  control.Nemesis(cluster, record=callable)                       start / heal faults, record FaultEvents
  schedule.ScheduleRunner(nemesis, steps)                         plays a plan in a thread; `with` heals on exit
  schedule.run_schedule(cluster, schedule, seed, duration_s, record)   the same in the caller's thread
  schedule.exit_on_signals()                                      SIGTERM/SIGHUP -> SystemExit, so finally heals
  control.sweep(cluster), Nemesis.heal_all()                      everything back: running, unpaused, no rule of ours
Module map: events (FaultEvent), base (Fault, targets), process, network (+ netrules: iptables), latency.
"""
