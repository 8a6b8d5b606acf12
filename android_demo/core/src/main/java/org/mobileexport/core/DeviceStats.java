package org.mobileexport.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;

/** What a person holding the phone feels: resident memory and latency figures. */
public final class DeviceStats {
    private DeviceStats() {
    }

    /** The VmRSS line of a {@code /proc/PID/status} text, in KiB; -1 if it has none. */
    public static long rssKib(String procStatus) {
        for (String line : procStatus.split("\n")) {
            if (line.startsWith("VmRSS:")) {
                String[] parts = line.substring(6).trim().split("\\s+");
                return Long.parseLong(parts[0]);
            }
        }
        return -1;
    }

    /** This process's resident memory in KiB (Linux and Android); -1 where /proc is not readable. */
    public static long currentRssKib() {
        try {
            return rssKib(new String(Files.readAllBytes(Paths.get("/proc/self/status")), StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** The median (the mean of the middle two for an even count). */
    public static double median(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("no values");
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }
}
