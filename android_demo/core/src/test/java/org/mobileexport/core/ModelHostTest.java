package org.mobileexport.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.Test;

/** The app's model lifetime: loads never overlap, screens leaving never crash or leak runs. */
public class ModelHostTest {
    /** How many fakes of one test exist at once (per test: other tests' workers may still be closing theirs). */
    static final class Census {
        final AtomicInteger alive = new AtomicInteger();
        final AtomicInteger mostAlive = new AtomicInteger();
    }

    /** A model set that counts itself in its test's census. */
    static final class Fake implements AutoCloseable {
        final int id;
        final Census census;
        volatile boolean closed;

        Fake(int id) {
            this(id, new Census());
        }

        Fake(int id, Census census) {
            this.id = id;
            this.census = census;
            census.mostAlive.accumulateAndGet(census.alive.incrementAndGet(), Math::max);
        }

        @Override
        public void close() {
            closed = true;
            census.alive.decrementAndGet();
        }
    }

    private static void drain(ModelHost<Fake>.Lease lease) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(1);
        lease.submit((m, e) -> done.countDown());
        assertTrue("worker stuck", done.await(10, TimeUnit.SECONDS));
    }

    @Test
    public void leavingDuringTheFirstLoadAndReopeningNeverHoldsTwoModelSets() throws Exception {
        Census census = new Census();
        AtomicInteger loads = new AtomicInteger();
        CountDownLatch loading = new CountDownLatch(1);
        List<String> errors = Collections.synchronizedList(new ArrayList<>());
        ModelHost<Fake> host = new ModelHost<>(() -> {
            int n = loads.incrementAndGet();
            loading.countDown();
            Thread.sleep(300); // still loading when the screen goes away
            return new Fake(n, census);
        }, e -> errors.add(e.toString()));
        ModelHost<Fake>.Lease first = host.acquire();
        assertTrue(loading.await(10, TimeUnit.SECONDS));
        first.close(); // back out during the first launch ...
        ModelHost<Fake>.Lease second = host.acquire(); // ... and reopen
        List<Integer> seen = new ArrayList<>();
        CountDownLatch ran = new CountDownLatch(1);
        second.submit((m, e) -> {
            seen.add(m.id);
            ran.countDown();
        });
        assertTrue(ran.await(10, TimeUnit.SECONDS));
        assertEquals(List.of(2), seen);
        assertEquals(2, loads.get());
        assertEquals("two model sets were in RAM at once", 1, census.mostAlive.get());
        second.close();
        ModelHost<Fake>.Lease third = host.acquire();
        drain(third);
        third.close();
        assertTrue(errors.isEmpty());
    }

    @Test
    public void aClickAfterAnotherWindowLeftIsServedNotRejected() throws Exception {
        ModelHost<Fake> host = new ModelHost<>(() -> new Fake(1), e -> { });
        ModelHost<Fake>.Lease a = host.acquire();
        ModelHost<Fake>.Lease b = host.acquire(); // a second instance (multi-window)
        a.close(); // the first one finishes
        Map<String, Boolean> state = new ConcurrentHashMap<>();
        CountDownLatch ran = new CountDownLatch(1);
        b.submit((m, e) -> { // used to be a RejectedExecutionException on the main thread
            state.put("models", m != null && !m.closed);
            ran.countDown();
        });
        assertTrue(ran.await(10, TimeUnit.SECONDS));
        assertTrue("the other window's models were closed", state.get("models"));
        b.close();
    }

    @Test
    public void runsQueuedBeforeAScreenFinishedDoNotRun() throws Exception {
        ModelHost<Fake> host = new ModelHost<>(() -> new Fake(1), e -> { });
        ModelHost<Fake>.Lease lease = host.acquire();
        CountDownLatch gate = new CountDownLatch(1);
        lease.submit((m, e) -> {
            try {
                gate.await(); // a long run in progress
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        });
        AtomicInteger queuedRuns = new AtomicInteger();
        for (int i = 0; i < 3; i++) {
            lease.submit((m, e) -> queuedRuns.incrementAndGet());
        }
        lease.close();
        lease.submit((m, e) -> queuedRuns.incrementAndGet()); // after close: ignored, no exception
        gate.countDown();
        ModelHost<Fake>.Lease next = host.acquire();
        drain(next);
        next.close();
        assertEquals(0, queuedRuns.get());
        assertFalse(lease.isOpen());
    }

    @Test
    public void aFailedLoadReachesTasksAsAnError() throws Exception {
        List<Throwable> logged = Collections.synchronizedList(new ArrayList<>());
        ModelHost<Fake> host = new ModelHost<>(() -> {
            throw new UnsatisfiedLinkError("no libexecutorch.so");
        }, logged::add);
        ModelHost<Fake>.Lease lease = host.acquire();
        Map<String, Throwable> got = new ConcurrentHashMap<>();
        CountDownLatch ran = new CountDownLatch(1);
        lease.submit((m, e) -> {
            if (m == null) {
                got.put("error", e);
            }
            ran.countDown();
        });
        assertTrue(ran.await(10, TimeUnit.SECONDS));
        assertNotNull(got.get("error"));
        assertEquals(1, logged.size());
        lease.close();
    }

    @Test
    public void aResultPublishedDuringARotationReachesTheNewScreen() {
        ModelHost<Fake> host = new ModelHost<>(() -> new Fake(1), e -> { });
        ModelHost<Fake>.Lease lease = host.acquire();
        List<String> oldScreen = new ArrayList<>();
        lease.observe((k, v) -> oldScreen.add(k + "=" + v));
        lease.publish("status", "loaded");
        lease.observe(null); // the old screen is destroyed
        lease.publish("result", "positive"); // the run finishes in between
        List<String> newScreen = new ArrayList<>();
        lease.observe((k, v) -> newScreen.add(k + "=" + v)); // the new screen takes the lease over
        assertEquals(List.of("status=loaded"), oldScreen);
        assertEquals(List.of("status=loaded", "result=positive"), newScreen);
        lease.close();
    }
}
