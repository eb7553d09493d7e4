"""Failover drills and load runs against a local deployment (regions + edge).

Operations tooling that sits next to the deployment it exercises:

* ``speech``     real speech utterances (espeak-ng, several voices) at the client rate
* ``callers``    synthetic callers speaking the OpenAI Realtime protocol to the edge
* ``faults``     process signals and a loopback fault proxy, always undone
* ``deployment`` find or start the Terraform-provisioned deployment, locate region processes
* ``scenarios``  what each drill does and when (faults fire at a moment of a turn)
* ``runner``     one drill or one load run from start to report
* ``slo``        service-level objectives and their verdicts
* ``report``     live progress line, summary table, report folder (JSON, Markdown, PNG)
"""
