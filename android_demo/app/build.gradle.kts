plugins {
    id("com.android.application")
}

android {
    namespace = "org.mobileexport.demo"
    compileSdk = 35

    defaultConfig {
        applicationId = "org.mobileexport.demo"
        minSdk = 26
        targetSdk = 35
        versionCode = 1
        versionName = "0.1"
        ndk {
            abiFilters += listOf("arm64-v8a", "x86_64")
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    // Models (and model.onnx.data, the .onnx weights) are memory-mapped/copied as they are: stored uncompressed.
    androidResources {
        noCompress += listOf("pte", "onnx", "onnx.data", "ort")
    }
}

dependencies {
    implementation(project(":core"))
    implementation("org.pytorch:executorch-android:${property("executorchVersion")}")
    // From Maven, executorch-android's POM brings fbjni and soloader (ExecuTorch's using-executorch-android
    // docs: only a bare .aar file needs them declared by hand), so the app does not pin them again.
    implementation("com.microsoft.onnxruntime:onnxruntime-android:${property("onnxruntimeVersion")}")
    // LiteRT's Interpreter (org.tensorflow.lite classes), on Google's Maven; for TfliteRunner and model.tflite
    implementation("com.google.ai.edge.litert:litert:${property("litertVersion")}")
}
