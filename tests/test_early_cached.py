"""A warm --check finishes a hit whose analysis the results cache holds in the worker that found it
(runner._prefilter_chunk): the same report as when every hit waits for the walk, links and hard
links included, and no front end runs for such a file."""
import json
import os

import pytest

from conftest import FIXTURES, run_inproc
from cpasync_migrate import runner


@pytest.fixture
def tree(tmp_path):
    t = tmp_path / "tree"
    for lang in ("python", "cpp"):
        for f in sorted((FIXTURES / lang).glob("*.in.*"))[::2]:
            (t / lang).mkdir(parents=True, exist_ok=True)
            (t / lang / f.name.replace(".in.", ".")).write_bytes(f.read_bytes())
    kernel = t / "python" / "alias_t_positional.py"
    if not kernel.exists():
        kernel.write_bytes((FIXTURES / "python" / "alias_t_positional.in.py").read_bytes())
    (t / "links").mkdir()
    os.symlink(kernel, t / "links" / "through_a_link.py")
    os.link(kernel, t / "links" / "hard_linked.py")
    return t


def _report(tree, cache, *extra):
    r = run_inproc("--check", "--format", "json", "--cache-dir", cache, *extra, ".", cwd=tree)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_same_report_with_and_without_early_answers(tree, tmp_path, monkeypatch, jobs):
    cache = tmp_path / "cache"
    cold = _report(tree, cache, "-j", jobs)  # fills the cache
    early = _report(tree, cache, "-j", jobs)
    monkeypatch.setattr(runner, "EARLY_CACHED", False)
    late = _report(tree, cache, "-j", jobs)
    assert early == late == cold
    names = {os.path.basename(f["path"]) for f in early["findings"]}
    # the kernel's three names (itself, a hard link, a symbolic link): processed once, under the first
    assert len(names & {"alias_t_positional.py", "hard_linked.py", "through_a_link.py"}) == 1


def test_a_cached_hit_is_answered_in_its_chunk_and_a_miss_is_left_for_the_scheduler(tree, tmp_path, monkeypatch):
    from cpasync_migrate import engine

    cache = tmp_path / "cache"
    settings = engine.RunSettings(mode="check", cache_dir=str(cache), keep_texts=False)
    kernel = str(tree / "python" / "alias_t_positional.py")
    plain = str(tree / "python" / "plain.py")
    with open(plain, "w") as fh:
        fh.write("x = 1\n")
    monkeypatch.setattr(runner, "_SETTINGS", settings)
    hits, _, done = runner._prefilter_chunk([(kernel, False), (plain, False)])
    assert hits == [(kernel, False)] and done == []  # not in the cache yet
    engine.process_file(kernel, settings)  # now it is
    hits, _, done = runner._prefilter_chunk([(kernel, False), (plain, False)])
    assert hits == [] and [pe for pe, _ in done] == [(kernel, False)]
    assert done[0][1].findings and done[0][1].cached
    monkeypatch.setattr(runner, "_SETTINGS", engine.RunSettings(mode="write", cache_dir=str(cache)))
    hits, _, done = runner._prefilter_chunk([(kernel, False)])
    assert hits == [(kernel, False)] and done == []  # only --check answers early: write mode waits
