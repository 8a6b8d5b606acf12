#!/usr/bin/env bash
# The optimum-onnx int8 baseline of issue 4, in its own venv (optimum-onnx pins transformers < 4.58).
#   benchmarks/optimum_baseline.sh CHECKPOINT_DIR OUT_DIR [TASK]   (TASK: text-classification by default)
# Writes OUT_DIR/fp32/model.onnx (optimum-cli export onnx) and OUT_DIR/int8/model_quantized.onnx
# (optimum-cli onnxruntime quantize --avx2: dynamic int8, ONNX Runtime's AVX2 settings), then
# `mobile-export bench` compares them with ours in one run.
set -euo pipefail
ckpt=$1; out=$2; task=${3:-text-classification}
venv=${OPTIMUM_VENV:-.venv-optimum}
if [ ! -x "$venv/bin/optimum-cli" ]; then
  python3.11 -m venv "$venv"
  "$venv/bin/pip" install -q torch==2.13.0 optimum-onnx==0.1.0 "transformers<4.58" onnxruntime==1.32.0 sentencepiece
fi
rm -rf "$out"; mkdir -p "$out"
"$venv/bin/optimum-cli" export onnx --model "$ckpt" --task "$task" "$out/fp32"
"$venv/bin/optimum-cli" onnxruntime quantize --onnx_model "$out/fp32" --avx2 -o "$out/int8"
ls -l "$out/fp32/model.onnx" "$out/int8/"*.onnx
