"""The disk cache of derived tables: a value is computed once per key, read back equal, and recomputed when the
file is damaged or written for another key; the on-device tokenizer's cached tables equal a fresh probe."""

from __future__ import annotations

import json

from mobile_export.core import diskcache


def test_a_value_is_computed_once_per_key(tmp_path, monkeypatch):
    monkeypatch.setenv(diskcache.ENV_VAR, str(tmp_path / "cache"))
    calls = []

    def compute():
        calls.append(1)
        return {"map": [[65, "a"]], "n": len(calls)}

    first = diskcache.cached_json("t", {"v": 1}, compute)
    assert diskcache.cached_json("t", {"v": 1}, compute) == first == {"map": [[65, "a"]], "n": 1}
    assert len(calls) == 1
    assert diskcache.cached_json("t", {"v": 2}, compute)["n"] == 2  # another key: computed
    [path] = [p for p in (tmp_path / "cache").iterdir() if json.loads(p.read_text())["key"]["v"] == 1]
    path.write_text('{"key": ')  # damaged: recomputed and rewritten
    assert diskcache.cached_json("t", {"v": 1}, compute)["n"] == 3
    assert json.loads(path.read_text())["value"]["n"] == 3
    stored = json.loads(path.read_text())
    path.write_text(json.dumps({"key": {**stored["key"], "v": 9}, "value": {"n": -1}}))  # another key's file
    assert diskcache.cached_json("t", {"v": 1}, compute)["n"] == 4
    assert not list((tmp_path / "cache").glob(".*tmp"))


def test_an_unwritable_cache_costs_only_time(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(diskcache.ENV_VAR, str(blocker / "cache"))  # under a file: cannot be made
    assert diskcache.cached_json("t", {"v": 1}, lambda: [1, 2]) == [1, 2]


def test_cached_tokenizer_tables_equal_a_fresh_probe(tmp_path, monkeypatch):
    from mobile_export.assets import ondevice

    monkeypatch.setenv(diskcache.ENV_VAR, str(tmp_path / "cache"))
    spec = json.dumps({"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "Lowercase"}]})
    key = {**ondevice._library_versions(), "spec": spec}
    fresh = ondevice._probe_spec(spec)
    assert diskcache.cached_json("charwise", key, lambda: ondevice._probe_spec(spec)) == fresh  # written
    assert diskcache.cached_json("charwise", key, lambda: {}) == fresh  # read back, equal
    assert len(fresh["map"]) > 1000  # NFKD and Lowercase change many code points
