from tests.edge.test_fuzz_http import ThreadedEdge, fuzzed_edge  # noqa: F401
from voicemesh.fuzz import run

def test_hunt(fuzzed_edge: ThreadedEdge) -> None:  # noqa: F811
    report = run(edge=fuzzed_edge.target, region=None, cases=800, seconds=300, seed=7, timeout_s=30)
    print(report.summary())
