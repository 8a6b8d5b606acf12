#!/usr/bin/env bash
# Usage: tokenize.sh ASSETS_DIR [--offsets] < lines.txt > ids.jsonl
# One JSON array of model input ids per UTF-8 input line, as transformers gives for
# tokenizer(text, truncation=True, max_length=N) on the exported checkpoint (--offsets: {"ids", "offsets"}).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
json_jar="${JSON_JAR:-/usr/share/java/com.android.json.jar}"
classes="$here/build/classes"
if [ ! -f "$classes/org/mobileexport/core/TokenizeMain.class" ] \
   || [ -n "$(find "$here/src/main/java" -newer "$classes/org/mobileexport/core/TokenizeMain.class" -name '*.java' | head -1)" ]; then
  mkdir -p "$classes"
  javac -encoding UTF-8 --release 17 -cp "$json_jar" -d "$classes" $(find "$here/src/main/java" -name '*.java')
fi
exec java -Xss16m -cp "$classes:$json_jar" org.mobileexport.core.TokenizeMain "$@"
