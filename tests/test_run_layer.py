"""One run layer: the parser, the configuration reader, the front end's options and the cache key all
come from the option table (options.py), and the command line is parse -> Run -> runner -> report."""
import dataclasses
import inspect
import json

import pytest

from conftest import run_inproc
from test_cli import LEGACY, write

from cpasync_migrate import cache, cli, config, engine, options
from cpasync_migrate.findings import FrontEndOptions


def test_abbreviations_are_refused(tmp_path):
    write(tmp_path / "k.py", LEGACY)
    r = run_inproc("--chec", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and "unrecognized arguments: --chec" in r.stderr
    assert run_inproc("--check", "k.py", cwd=tmp_path).returncode == 1


def test_every_option_of_the_table_is_on_the_command_line():
    p = cli.build_parser()
    flags = {s for a in p._actions for s in a.option_strings}
    dests = {a.dest for a in p._actions}
    for o in options.OPTIONS:
        assert set(o.flags) <= flags, o.name
        assert o.name in dests, o.name
    # and nothing on the command line that the table lacks (besides help, version and their negations)
    table = {s for o in options.OPTIONS for s in o.flags} | {"-h", "--help", "--version", "--no-unsafe-fixes"}
    assert flags == table


def test_config_keys_are_the_tables(tmp_path):
    assert set(config.KEYS) == {o.key for o in options.OPTIONS if o.key}
    write(tmp_path / "k.py", LEGACY)
    write(tmp_path / "pyproject.toml", "[tool.cpasync-migrate]\nline-length = \"wide\"\n")
    r = run_inproc("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 3
    assert f"{tmp_path / 'pyproject.toml'}: [tool.cpasync-migrate] line-length must be a whole number" in r.stderr
    write(tmp_path / "pyproject.toml", "[tool.cpasync-migrate]\nline-lenght = 90\n")
    r = run_inproc("--check", "k.py", cwd=tmp_path)
    assert r.returncode == 3 and f"{tmp_path / 'pyproject.toml'}: unknown key 'line-lenght'" in r.stderr


def test_front_end_options_are_the_result_options():
    # cpp_style is no option: each C++ file's nearest .clang-format gives it, and cache.key takes it as
    # ``layout`` (checked below)
    fields = {f.name for f in dataclasses.fields(FrontEndOptions)} - {"rules", "cpp_style"}
    assert fields == {o.front_end for o in options.result_options()}
    plain = engine.RunSettings(mode="check")
    assert cache.key(plain, "k.cc", "cpp", b"x", layout=(80, 4)) != cache.key(plain, "k.cc", "cpp", b"x",
                                                                              layout=(100, 4))
    s = engine.RunSettings(mode="check", target="0.1.9", style="access_ptr", migrate_tvm=True)
    fe = engine.front_end_options(s, line_length=61)
    assert (fe.target.name, fe.source.name, fe.style, fe.migrate_tvm, fe.line_length) == (
        "0.1.9", "legacy", "access_ptr", True, 61)


def test_a_result_changing_option_is_in_the_cache_key_by_construction(monkeypatch):
    a = engine.RunSettings(mode="check", unsafe_fixes=False)
    b = dataclasses.replace(a, unsafe_fixes=True)
    # --unsafe-fixes decides what is applied, not what an analysis finds: one entry serves both
    assert cache.key(a, "k.py", "python", b"x") == cache.key(b, "k.py", "python", b"x")
    fake = options.Option("fake", ("--fake",), options.BOOL, False, results=True, front_end="fake",
                          setting="unsafe_fixes")
    monkeypatch.setattr(options, "OPTIONS", options.OPTIONS + (fake,))
    assert cache.key(a, "k.py", "python", b"x") != cache.key(b, "k.py", "python", b"x")
    # each option the table marks so changes the key
    monkeypatch.undo()
    for o in options.result_options():
        if o.name == "line_length":
            assert cache.key(a, "k.py", "python", b"x", line_length=60) != cache.key(a, "k.py", "python", b"x")
            continue
        other = {"target": "0.1.9", "source": "0.1.8", "style": "access_ptr", "migrate_tvm": True}[o.name]
        assert cache.key(dataclasses.replace(a, **{o.setting: other}), "k.py", "python", b"x") != \
            cache.key(a, "k.py", "python", b"x"), o.name


def test_the_command_line_is_thin():
    src = inspect.getsource(cli.run)
    assert len(src.splitlines()) <= 6, src
    assert "Run.build(args).execute()" in src
    assert not hasattr(cli, "_run_stdin") and not hasattr(cli, "_selection")


def test_line_length_changes_the_layout(tmp_path):
    """--line-length reaches the front end (a result-changing option), and --config line-length = N too."""
    write(tmp_path / "k.py", LEGACY)
    wide = run_inproc("--diff", "--no-cache", "k.py", cwd=tmp_path)
    narrow = run_inproc("--diff", "--no-cache", "--line-length", "40", "k.py", cwd=tmp_path)
    by_config = run_inproc("--diff", "--no-cache", "--config", "line-length = 40", "k.py", cwd=tmp_path)
    assert wide.returncode == narrow.returncode == 1
    assert wide.stdout != narrow.stdout and narrow.stdout == by_config.stdout
    assert max(len(x) for x in narrow.stdout.splitlines() if x.startswith("+") and not x.startswith("+++")) <= 41


def test_the_configuration_page_is_the_table():
    from conftest import ROOT

    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    start = "<!-- generated from cpasync_migrate/options.py: markdown_table() -->\n"
    body = page.split(start, 1)[1].split("<!-- end of the generated table -->", 1)[0]
    assert body == options.markdown_table(), "regenerate the table in docs/configuration.md"
    for o in options.OPTIONS:  # every option and key named on the page
        assert all(f"`{f}`" in body for f in o.flags) and (o.key is None or f"`{o.key}`" in body)
