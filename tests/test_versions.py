"""PEP 440 ordering of TileLang versions, and finding the installed TileLang from its metadata."""
import itertools
import sys

import pytest

from cpasync_migrate.cli import choose_target, installed_tilelang
from cpasync_migrate.rules import RulesError, load_rules, parse_version

VERSIONS = [
    "0.1.9rc10", "0.1.9rc9", "0.1.9", "0.1.9.0", "0.1.9.post1", "0.1.9.dev3", "0.1.9a1.dev2", "0.1.9rc1.post2",
    "0.1.9-1", "0.1.9+local.7", "0.1.9+local.abc", "0.1.9+7", "1!0.1", "0.1.10", "0.1.7.post1", "0.1.7.post2",
    "0.1.9c3", "0.1.9-preview.2", "0.1.9.post1.dev1", "0.1.9rc9.dev1", "v0.2", "0.1.9_rc_9", "0.1.9.RC9", "0.1.8",
    "0.1.9alpha", "0.1.9r", "0.1.9+1.a", "0.1.15", "0.1.13",
]


def test_release_candidates_compare_by_number():
    assert parse_version("0.1.9rc10") > parse_version("0.1.9rc9")
    assert parse_version("0.1.9rc9") < parse_version("0.1.9") < parse_version("0.1.9.post1") < parse_version("0.1.10")
    assert parse_version("0.1.9.dev1") < parse_version("0.1.9a0") < parse_version("0.1.9b0") < parse_version("0.1.9rc0")
    assert parse_version("0.1.9") == parse_version("0.1.9.0") == parse_version("v0.1.9")
    with pytest.raises(RulesError):
        parse_version("0.1.9-final-x")


def test_order_is_packagings():
    version = pytest.importorskip("packaging.version")
    for a, b in itertools.product(VERSIONS, VERSIONS):
        ka, kb = parse_version(a), parse_version(b)
        va, vb = version.Version(a), version.Version(b)
        assert (ka < kb, ka == kb) == (va < vb, va == vb), (a, b)


def _site(tmp_path, name, files):
    d = tmp_path / name
    for rel, text in files.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return d


def test_highest_version_in_one_folder_wins(tmp_path, monkeypatch):
    site = _site(tmp_path, "site", {"tilelang-0.1.9rc9.dist-info/METADATA": "Name: tilelang\n",
                                    "tilelang-0.1.9rc10.dist-info/METADATA": "Name: tilelang\n",
                                    "tilelang_extras-9.0.dist-info/METADATA": "Name: tilelang-extras\n"})
    monkeypatch.setattr(sys, "path", [str(site)])
    assert installed_tilelang() == "0.1.9rc10"


def test_versionless_egg_info_is_read_from_pkg_info(tmp_path, monkeypatch):
    editable = _site(tmp_path, "src", {"tilelang.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: tilelang\n"
                                                                     "Version: 0.1.13\n\nVersion: 9.9\n"})
    later = _site(tmp_path, "site", {"tilelang-0.1.7.post1.dist-info/METADATA": ""})
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(editable), str(later)])
    assert installed_tilelang() == "0.1.13", "the first sys.path entry with a distribution wins, as for an import"
    t = choose_target(None, load_rules(), "")
    assert (t["generation"], t["reason"]) == ("0.1.9", "installed tilelang 0.1.13")


def test_egg_info_with_python_tag(tmp_path, monkeypatch):
    site = _site(tmp_path, "site", {"tilelang-0.1.8-py3.11.egg-info/PKG-INFO": "Version: 0.1.8\n"})
    monkeypatch.setattr(sys, "path", [str(site)])
    assert installed_tilelang() == "0.1.8"
    monkeypatch.setattr(sys, "path", [str(_site(tmp_path, "empty", {"tilelang.egg-info/PKG-INFO": "Name: x\n"}))])
    assert installed_tilelang() is None
