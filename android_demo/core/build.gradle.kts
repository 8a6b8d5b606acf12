// Plain Java, no Android dependency: the tokenizers, input building, labels and the self-test.
// org.json is part of Android; on the JVM it comes from a library (Debian: libandroid-json-java).
plugins {
    `java-library`
}

java {
    sourceCompatibility = JavaVersion.VERSION_17
    targetCompatibility = JavaVersion.VERSION_17
}

dependencies {
    compileOnly("com.vaadin.external.google:android-json:0.0.20131108.vaadin1")
    testImplementation("com.vaadin.external.google:android-json:0.0.20131108.vaadin1")
    testImplementation("junit:junit:4.13.2")
}

tasks.test {
    // DemoAssetsTest reads tokenizer assets exported by `make android-junit` (or pass your own).
    systemProperty("mobileexport.assets", rootDir.resolve("core/build/test-assets").path)
}
