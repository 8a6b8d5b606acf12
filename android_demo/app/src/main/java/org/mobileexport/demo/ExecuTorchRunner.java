package org.mobileexport.demo;

import java.io.File;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.ModelRunner;
import org.pytorch.executorch.EValue;
import org.pytorch.executorch.Module;
import org.pytorch.executorch.Tensor;

/**
 * model.pte through ExecuTorch's Android library (XNNPACK delegate inside the program).
 *
 * <p>The export writes ALBERT as a layer loop (manifest.json, calling_convention "albert-layer-loop/1"):
 * {@code embed} turns the ids into hidden states and an additive mask, {@code layer_group_G} is the shared
 * layer, run once per entry of {@code layer_schedule}, and {@code head} gives the task's outputs. Each
 * method packs its XNNPACK weights once when it loads, so the shared layer is in RAM once however many
 * layers run. The program is memory-mapped, not read into the heap.
 */
final class ExecuTorchRunner implements ModelRunner, AutoCloseable {
    private final Module module;
    private final String[] layers;

    ExecuTorchRunner(File pte) {
        module = Module.load(pte.getAbsolutePath(), Module.LOAD_MODE_MMAP);
        EValue[] schedule = module.execute("layer_schedule");
        layers = new String[schedule.length];
        for (int i = 0; i < schedule.length; i++) {
            layers[i] = "layer_group_" + schedule[i].toInt();
        }
    }

    @Override
    public float[] run(Encoding in) {
        long[] shape = {1, in.length()};
        EValue[] embedded = module.execute("embed",
                EValue.from(Tensor.fromBlob(in.inputIds, shape)),
                EValue.from(Tensor.fromBlob(in.attentionMask, shape)),
                EValue.from(Tensor.fromBlob(in.tokenTypeIds, shape)));
        EValue hidden = embedded[0];
        EValue mask = embedded[1];
        for (String layer : layers) {
            hidden = module.execute(layer, hidden, mask)[0];
        }
        return module.execute("head", hidden)[0].toTensor().getDataAsFloatArray();
    }

    @Override
    public String name() {
        return "ExecuTorch .pte";
    }

    @Override
    public void close() {
        module.destroy();
    }
}
