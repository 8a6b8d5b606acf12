"""Every command that reads an artifact, given a broken one: exit 2, one line naming the file and the problem, no
traceback, nothing written (shared by the hostile-artifact tests of every format)."""

from __future__ import annotations

from pathlib import Path

from mobile_export.cli.main import main


def assert_refused_by_every_command(ckpt: Path, path: Path, tmp_path: Path, capsys, words: str) -> None:
    """``parity``, ``size`` and ``bench`` on ``path``: each exits 2 with one ``mobile-export`` line holding
    ``words`` and naming the file, no traceback, and writes nothing."""
    runs = {
        "parity": ["parity", str(ckpt), str(path), "--out", str(tmp_path / "parity-out"), "--quiet"],
        "size": ["size", str(path), "--checkpoint", str(ckpt), "--no-memory"],
        "bench": ["bench", str(path), "--runs", "1", "--seq-lens", "8", "--threads", "1",
                  "--json", str(tmp_path / "bench.json")],
    }
    for command, argv in runs.items():
        code = main(argv)
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.startswith("mobile-export")]
        assert code == 2, (command, code, err[-2000:])
        assert len(lines) == 1 and "Traceback" not in err and "unexpected error" not in err, (command, err[-2000:])
        assert words in lines[0], (command, lines[0])
        assert path.name in lines[0] or str(path) in lines[0] or "symlink" in lines[0], (command, lines[0])
    assert not (tmp_path / "parity-out").exists() and not (tmp_path / "bench.json").exists()
