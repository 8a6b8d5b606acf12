"""Write a stand-in for Android's generated R class from app/src/main/res (ids, layouts, strings).

Only for `make android-compile`, which compiles the app without the Android SDK's aapt2: the ids here
are placeholders, never packaged.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def r_class(res: Path, package: str) -> str:
    """The Java source of ``package.R`` for the resources under ``res``."""
    ids: set[str] = set()
    strings: set[str] = set()
    layouts = sorted(p.stem for p in (res / "layout").glob("*.xml"))
    for xml in res.rglob("*.xml"):
        text = xml.read_text(encoding="utf-8")
        ids.update(re.findall(r'@\+id/(\w+)', text))
        strings.update(re.findall(r'<string name="(\w+)"', text))
    counter = iter(range(0x7F010000, 0x7F020000))
    lines = [f"package {package};", "", "public final class R {"]
    for kind, names in (("id", sorted(ids)), ("layout", layouts), ("string", sorted(strings))):
        lines.append(f"    public static final class {kind} {{")
        lines += [f"        public static final int {name} = {next(counter)};" for name in names]
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    res_dir, pkg, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(r_class(res_dir, pkg), encoding="utf-8")
