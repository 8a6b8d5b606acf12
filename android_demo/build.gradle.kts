plugins {
    id("com.android.application") version "8.13.0" apply false
}
