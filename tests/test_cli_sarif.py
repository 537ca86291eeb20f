"""SARIF for code scanning: rule help from the codes' pages, fingerprints that survive line shifts,
and the proof verdict of each site under --verify."""
import json
import shutil

import pytest

from conftest import ROOT, run_cli, run_inproc
from test_cli import SARIF_SCHEMA, write
from test_cli_ci import LEGACY

from cpasync_migrate import codes


def _examples(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def _sarif(*args, cwd):
    import jsonschema

    r = run_cli(*args, "--format", "sarif", cwd=cwd)
    assert r.returncode in (0, 1), r.stderr
    sarif = json.loads(r.stdout)
    jsonschema.validate(sarif, SARIF_SCHEMA())
    return sarif["runs"][0]


def _region(res):
    return res["locations"][0]["physicalLocation"]["region"]


def test_rules_carry_the_help_of_their_pages(tmp_path):
    run = _sarif("--check", "examples", cwd=_examples(tmp_path))
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted({x["ruleId"] for x in run["results"]})
    assert rules, "the examples have findings"
    for r in rules:
        page = (ROOT / "docs" / "codes" / f"{r['id']}.md").read_text(encoding="utf-8")
        meta = codes.CODES[r["id"]]
        assert r["name"] == meta.name
        assert r["shortDescription"]["text"] == meta.summary
        assert r["defaultConfiguration"]["level"] == meta.severity
        assert r["help"]["markdown"] == page
        assert r["help"]["text"].startswith(f"{r['id']} {meta.name}\n") and "```" not in r["help"]["text"]
        assert "T.ptx_cp_async(" in r["help"]["text"], "the example's code is kept in the plain text"
        what = page.split("\n## What\n", 1)[1].split("\n## ", 1)[0].strip()
        assert r["fullDescription"]["markdown"] == what
        # no public home yet: the page is named relative to the tool's repository, not by a made-up URL
        assert "helpUri" not in r
        assert r["properties"]["page"] == {"uri": f"docs/codes/{r['id']}.md", "uriBaseId": codes.TOOL_ROOT}
    driver = run["tool"]["driver"]
    assert "informationUri" not in driver
    assert driver["locations"] == [{"uri": "README.md", "uriBaseId": codes.TOOL_ROOT}]
    assert codes.TOOL_ROOT in run["originalUriBaseIds"] and "uri" not in run["originalUriBaseIds"][codes.TOOL_ROOT]
    assert "pypi.org" not in json.dumps(run)


def test_a_published_base_gives_absolute_help_and_information_uris(monkeypatch, tmp_path):
    from cpasync_migrate.report_sarif import sarif_report

    monkeypatch.setattr(codes, "DOCS_BASE_URI", "https://example.org/cpasync-migrate/blob/abc123/")
    from cpasync_migrate.findings import FileOutcome, Finding, Status

    f = Finding(str(tmp_path / "k.py"), 9, 9, 9, 70, "CPA002", "left for a person", status=Status.MANUAL)
    run = sarif_report([FileOutcome(str(tmp_path / "k.py"), "python", [f])], {}, {})["runs"][0]
    assert run["tool"]["driver"]["rules"][0]["helpUri"] == \
        "https://example.org/cpasync-migrate/blob/abc123/docs/codes/CPA002.md"
    assert run["tool"]["driver"]["informationUri"] == "https://example.org/cpasync-migrate/blob/abc123/README.md"
    assert run["originalUriBaseIds"][codes.TOOL_ROOT] == {"uri": "https://example.org/cpasync-migrate/blob/abc123/"}


def test_fingerprints_are_stable_across_runs_and_line_shifts(tmp_path):
    _examples(tmp_path)
    first = _sarif("--check", "examples", cwd=tmp_path)
    again = _sarif("--check", "examples", cwd=tmp_path)

    def prints(run):
        return {(x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                 x["partialFingerprints"]["cpasyncSite/v1"]): _region(x)["startLine"] for x in run["results"]}

    assert prints(first) == prints(again)
    assert len(set(prints(first))) == len(first["results"]), "every result has its own fingerprint"
    # three lines above every site: the lines move, the fingerprints do not
    for p in (tmp_path / "examples").glob("*.py"):
        p.write_text("# a\n# b\n# c\n" + p.read_text())
    shifted = _sarif("--check", "examples", cwd=tmp_path)
    assert set(prints(shifted)) == set(prints(first))
    assert all(prints(shifted)[k] == line + 3 for k, line in prints(first).items())


def test_identical_sites_of_one_file_differ_by_their_index(tmp_path):
    call = "        T.ptx_cp_async(\"float16\", S.data, tx * 8, A.data, tx * 8, 16)\n"
    assert LEGACY.count(call) == 1
    text = LEGACY.replace(call, call + call)
    write(tmp_path / "k.py", text)
    run = _sarif("--check", "k.py", cwd=tmp_path)
    fps = [x["partialFingerprints"]["cpasyncSite/v1"] for x in run["results"] if x["ruleId"] == "CPA001"]
    assert len(fps) == 2 and len(set(fps)) == 2
    # the first copy keeps the fingerprint the call has alone: the index counts, not the line
    write(tmp_path / "k.py", LEGACY)
    one = _sarif("--check", "k.py", cwd=tmp_path)
    assert [x["partialFingerprints"]["cpasyncSite/v1"] for x in one["results"] if x["ruleId"] == "CPA001"] == fps[:1]


@pytest.mark.slow  # runs the verifier on every site through the CLI
def test_verify_attaches_each_sites_verdict(tmp_path):
    run = _sarif("--verify", "--device", "cpu", "--check", "--unsafe-fixes", "examples", cwd=_examples(tmp_path))
    assert run["results"]
    kernels = {(v["path"], v["kernel"]) for v in run["properties"]["verdicts"]}
    for x in run["results"]:
        v = x["properties"]["verify"]
        path = x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (path, v["kernel"]) in kernels
        assert v["verdict"] == v["kernel_verdict"] == "equivalent", v
        assert v["verdict_reason"] == "addresses, byte count, extents, rw masks and predicate agree"
        assert "counterexample" not in v
    plain = _sarif("--check", "--unsafe-fixes", "examples", cwd=tmp_path)
    assert all("verify" not in x["properties"] for x in plain["results"]), "no verdict without --verify"


def test_verify_mismatch_carries_the_counterexample(tmp_path, monkeypatch):
    """A rewriter bug injected on purpose (the source offset dropped): the site's result says mismatch and why."""
    from cpasync_migrate import python as pyfe
    from cpasync_migrate.findings import Edit

    write(tmp_path / "k.py", LEGACY)
    real = pyfe.analyze

    def buggy(text, path, options, **kw):  # (kw: the engine's ``fixes``)
        a = real(text, path, options, **kw)
        for fd in a.findings:
            for i, e in enumerate(fd.fix.edits if fd.fix else []):
                if "A.data, tx * 8, 8, 1)" in e.replacement:
                    fd.fix.edits[i] = Edit(e.start, e.end, e.replacement.replace("A.data, tx * 8, 8, 1)",
                                                                                 "A.data, 0, 8, 1)"))
        return a

    monkeypatch.setattr(pyfe, "analyze", buggy)
    r = run_inproc("--verify", "--device", "cpu", "--check", "--format", "sarif", "k.py", cwd=tmp_path)
    import jsonschema

    sarif = json.loads(r.stdout)
    jsonschema.validate(sarif, SARIF_SCHEMA())
    [res] = [x for x in sarif["runs"][0]["results"] if x["ruleId"] == "CPA001"]
    v = res["properties"]["verify"]
    assert v["kernel"] == "main" and v["kernel_verdict"] == "mismatch" and v["verdict"] == "mismatch"
    failed = v["counterexample"]["failed_checks"]
    assert [c["check"] for c in failed] == ["src byte address"], failed


def test_a_site_without_a_fix_is_fingerprinted_by_its_own_text(tmp_path):
    from test_cli import MANUAL

    def fingerprint(text):
        write(tmp_path / "k.py", text)
        [x] = _sarif("--check", "k.py", cwd=tmp_path)["results"]
        assert x["ruleId"] == "CPA002" and "fixes" not in x
        return x["partialFingerprints"]["cpasyncSite/v1"]

    first = fingerprint(MANUAL)
    assert fingerprint("\n\n" + MANUAL.replace("T.ptx_cp_async(*args)", "T.ptx_cp_async( *args )")) == first
    assert fingerprint(MANUAL.replace("*args", "*more")) != first


def test_a_fingerprint_survives_a_formatter_s_trailing_comma(tmp_path):
    """ruff format and black split a long call one argument per line and add a trailing comma."""
    def fingerprint(call):
        write(tmp_path / "k.py", KERNEL_WITH_CALL.format(call=call))
        [x] = [r for r in _sarif("--check", "k.py", cwd=tmp_path)["results"] if r["ruleId"] == "CPA001"]
        return x["partialFingerprints"]["cpasyncSite/v1"]

    one_line = 'T.ptx_cp_async("float16", S.data, tx * 8, A.data, tx * 8, 16)'
    exploded = ('T.ptx_cp_async(\n                "float16",\n                S.data,\n                tx * 8,\n'
                '                A.data,\n                tx * 8,\n                16,\n            )')
    assert fingerprint(exploded) == fingerprint(one_line)
    assert fingerprint(one_line.replace("16)", "8)")) != fingerprint(one_line), "the text still counts"


KERNEL_WITH_CALL = """import tilelang.language as T


@T.prim_func
def main(A: T.Tensor((256,), "float16")):
    with T.Kernel(1, threads=32) as bx:
        S = T.alloc_shared((256,), "float16")
        tx = T.get_thread_binding(0)
        for i in T.serial(1):
            {call}
"""


def test_artifact_uris_are_percent_encoded_and_fingerprints_keep_the_path_as_written(tmp_path):
    """A name with a space, ``#`` and ``%`` and one that is not UTF-8 give valid URI references (RFC 3986)."""
    import os

    legacy = LEGACY.encode("utf-8")
    (tmp_path / "a b#%.py").write_bytes(legacy)
    odd = os.fsdecode(b"k\xff.py")
    (tmp_path / odd).write_bytes(legacy)
    r = run_cli("--check", "--format", "sarif", "--no-cache", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    run = json.loads(r.stdout)["runs"][0]
    uris = sorted({loc["physicalLocation"]["artifactLocation"]["uri"] for res in run["results"]
                   for loc in res["locations"]})
    assert uris == ["a%20b%23%25.py", "k%FF.py"], uris
    from cpasync_migrate import report_sarif

    assert report_sarif._slashed("a b#%.py") == "a b#%.py"
