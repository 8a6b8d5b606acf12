#!/usr/bin/env bash
# Check android_demo/compile-only against ExecuTorch's real Android API at one revision:
#   android_demo/tools/verify_executorch_api.sh EXECUTORCH_GIT_DIR REV
# Compiles that revision's Module/EValue/Tensor Kotlin sources (kotlin-compiler-embeddable 1.9.23, fbjni and
# soloader's nativeloader from Maven Central), compiles the whole app against them, and fails if any member
# the compile-only description declares is missing upstream or has another signature. Run `make
# android-compile` first. Everything it builds stays under build/; nothing of ExecuTorch is committed.
set -euo pipefail
git_dir=$1 rev=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$here/android_demo/build/verify-executorch/$rev
rm -rf "$work" && mkdir -p "$work/src" "$work/api" "$work/app"
cat > "$work/pom.xml" <<'POM'
<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>verify</artifactId><version>1</version><dependencies>
  <dependency><groupId>org.jetbrains.kotlin</groupId><artifactId>kotlin-compiler-embeddable</artifactId><version>1.9.23</version></dependency>
  <dependency><groupId>com.facebook.fbjni</groupId><artifactId>fbjni-java-only</artifactId><version>0.7.0</version></dependency>
  <dependency><groupId>com.facebook.soloader</groupId><artifactId>nativeloader</artifactId><version>0.10.5</version></dependency>
</dependencies></project>
POM
(cd "$work" && mvn -q -B dependency:build-classpath -Dmdep.outputFile=cp.txt)
cp=$(cat "$work/cp.txt")
m2=$HOME/.m2/repository
android=$m2/org/robolectric/android-all/14-robolectric-10818077/android-all-14-robolectric-10818077.jar
stdlib=$m2/org/jetbrains/kotlin/kotlin-stdlib/1.9.23/kotlin-stdlib-1.9.23.jar
ort=$m2/com/microsoft/onnxruntime/onnxruntime/1.29.0/onnxruntime-1.29.0.jar
base=extension/android/executorch_android/src/main/java/org/pytorch/executorch
for f in $(git -C "$git_dir" ls-tree --name-only "$rev" "$base/" | grep '\.kt$') "$base/annotations/Experimental.kt"; do
  git -C "$git_dir" show "$rev:$f" > "$work/src/$(basename "$f")"
done
java -cp "$cp" org.jetbrains.kotlin.cli.jvm.K2JVMCompiler -no-stdlib -no-reflect -jvm-target 17 -nowarn \
  -cp "$android:$m2/com/facebook/fbjni/fbjni-java-only/0.7.0/fbjni-java-only-0.7.0.jar:$m2/com/facebook/soloader/nativeloader/0.10.5/nativeloader-0.10.5.jar:$stdlib" \
  -d "$work/api" "$work"/src/*.kt
cd "$here"
javac -encoding UTF-8 --release 17 -Xlint:all,-classfile -Werror -cp "/usr/share/java/com.android.json.jar:$ort:$android:$work/api:$stdlib" \
  -d "$work/app" $(find android_demo/core/src/main/java android_demo/app/src/main/java android_demo/build/app/gen -name '*.java')
status=0
for c in Module EValue Tensor; do
  missing=$(diff <(javap -cp android_demo/build/app/compile-only -public "org.pytorch.executorch.$c" | grep -v '^Compiled\|^}\|class ' | sed 's/^ *//; s/final //g' | sort) \
                 <(javap -cp "$work/api" -public "org.pytorch.executorch.$c" | sed 's/^ *//; s/final //g' | sort) | grep '^<' || true)
  if [ -n "$missing" ]; then echo "$c: not in ExecuTorch at $rev:"; echo "$missing"; status=1; fi
done
[ $status = 0 ] && echo "compile-only description and the app match ExecuTorch's Android API at $rev"
exit $status
