"""Failover drills and load runs against a local deployment (regions + edge).

Operations tooling that drives the deployment from outside, as its users and operators do:

* ``speech``     real speech utterances (espeak-ng, several voices) at the client rate
* ``records``    one record per turn as the caller heard it, on the drill's clock
* ``callers``    synthetic callers on the one Realtime client (``voicemesh.realtime``)
* ``faults``     process signals and a loopback fault proxy, always undone
* ``deployment`` find or start the Terraform-provisioned deployment, locate region processes
* ``scenarios``  what each drill does and when (faults fire at a moment of a turn)
* ``runner``     one drill or one load run from start to report
* ``slo``        service-level objectives and their verdicts
* ``report``     the report folder (JSON, Markdown) and reading it back
* ``timeline``   the report's pictures (drill timeline, load chart)
* ``console``    the live progress line and summary tables on the terminal
"""
