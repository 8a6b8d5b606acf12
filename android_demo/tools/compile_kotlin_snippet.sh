#!/usr/bin/env bash
# Compile the Kotlin snippet of android_demo/README.md (the ```kotlin block after the line
# "<!-- compiled by make android-library -->") against the core library's jar:
#   android_demo/tools/compile_kotlin_snippet.sh CORE_JAR BUILD_DIR
# kotlin-compiler-embeddable 1.9.23 and org.json come from Maven Central; everything stays under BUILD_DIR.
set -euo pipefail
jar=$1 work=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work/classes"
awk '/<!-- compiled by make android-library -->/ {armed=1; next}
     armed && /^```kotlin/ {inside=1; next}
     inside && /^```/ {exit}
     inside {print}' "$here/android_demo/README.md" > "$work/Snippet.kt"
[ -s "$work/Snippet.kt" ] || { echo "no Kotlin snippet found in android_demo/README.md" >&2; exit 2; }
cat > "$work/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>snippet</artifactId><version>1</version><dependencies>
  <dependency><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-compiler-embeddable</artifactId><version>1.9.23</version></dependency>
  <dependency><groupId>org.json</groupId><artifactId>json</artifactId><version>20260814</version></dependency>
</dependencies></project>
POM
(cd "$work" && mvn -q -B dependency:build-classpath -Dmdep.outputFile=cp.txt)
cp=$(cat "$work/cp.txt")
stdlib=$(tr ':' '\n' < "$work/cp.txt" | grep '/kotlin-stdlib-1.9.23.jar$')
json=$(tr ':' '\n' < "$work/cp.txt" | grep '/json-20260814.jar$')
java -cp "$cp" org.jetbrains.kotlin.cli.jvm.K2JVMCompiler -no-stdlib -no-reflect -jvm-target 17 -Werror \
  -cp "$jar:$json:$stdlib" -d "$work/classes" "$work/Snippet.kt"
echo "android-library: the README's Kotlin snippet compiled against $(basename "$jar") ($(find "$work/classes" -name '*.class' | wc -l) classes)"
