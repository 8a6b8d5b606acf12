package org.mobileexport.demo;

import java.io.File;
import org.mobileexport.core.Encoding;
import org.mobileexport.core.ModelRunner;
import org.pytorch.executorch.EValue;
import org.pytorch.executorch.Module;
import org.pytorch.executorch.Tensor;

/** model.pte through ExecuTorch's Android library (XNNPACK delegate inside the program). */
final class ExecuTorchRunner implements ModelRunner, AutoCloseable {
    private final Module module;

    ExecuTorchRunner(File pte) {
        module = Module.load(pte.getAbsolutePath());
    }

    @Override
    public float[] run(Encoding in) {
        long[] shape = {1, in.length()};
        EValue[] out = module.forward(
                EValue.from(Tensor.fromBlob(in.inputIds, shape)),
                EValue.from(Tensor.fromBlob(in.attentionMask, shape)),
                EValue.from(Tensor.fromBlob(in.tokenTypeIds, shape)));
        return out[0].toTensor().getDataAsFloatArray();
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
