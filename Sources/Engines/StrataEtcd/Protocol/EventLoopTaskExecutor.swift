import Dispatch
internal import NIOCore
internal import NIOPosix
@_spi(StrataInternals) import StrataEngine

/// Runs the async work of gRPC for the engine's synchronous callers, on an event loop of the
/// etcd engine's own group (``group``, which also carries its connections) instead of Swift's
/// cooperative pool.
///
/// Why not the pool: the engine's contract is synchronous, so a caller blocks until its request
/// is answered, and callers are often tasks on the pool themselves (tests, servers, observation).
/// On a 2-core machine the pool has two threads; two callers blocked there would leave no thread
/// to run the requests they wait for. A task whose executor preference is this one runs its child
/// tasks here too (gRPC's calls are structured), so nothing it waits for needs the pool; but
/// `Task.sleep`, with which gRPC enforces a call's timeout, wakes on the pool (an executor that
/// is not a scheduling one), so ``runBlocking(until:_:)`` enforces the deadline itself, on the loop.
///
/// Why a group of its own: a caller blocked on a loop of a group that also carried its
/// connection (NIO's shared singleton, say, under a server) would wait for itself.
final class EventLoopTaskExecutor: TaskExecutor {
    /// The etcd engine's event loops (one per core, 2 to 4): its connections and its tasks.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: min(max(System.coreCount, 2), 4))

    /// The loop the tasks run on; the transport puts its connections on it too.
    let loop: any EventLoop
    private static let loops: [any EventLoop] = Array(group.makeIterator())

    init(_ loop: any EventLoop = EventLoopTaskExecutor.group.next()) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// Runs `work` as a task on this executor and blocks the calling thread until it ends; at
    /// `deadline` the task is cancelled (gRPC ends a cancelled call at once, with an error). Never
    /// call it from one of ``group``'s loops (it could wait for itself).
    func runBlocking<T: Sendable>(until deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () async -> T) -> T {
        precondition(MultiThreadedEventLoopGroup.currentEventLoop.map { current in !Self.loops.contains { $0 === current } } ?? true,
                     "EventLoopTaskExecutor.runBlocking called on the etcd engine's event loop")
        let outcome = Outcome<T>()
        let task = Task(executorPreference: self) {
            let value = await work()
            outcome.value.withLock { $0 = value }
            outcome.done.signal()
        }
        let nanoseconds = max(ContinuousClock.now.duration(to: deadline).wholeNanoseconds, 0)
        let cancel = loop.scheduleTask(in: .nanoseconds(nanoseconds)) { task.cancel() }
        outcome.done.wait()
        cancel.cancel()
        return outcome.value.withLock { $0! }
    }

    /// A task's result, handed to the thread waiting for it.
    private final class Outcome<T: Sendable>: Sendable {
        let value = Locked<T?>(nil)
        let done = DispatchSemaphore(value: 0)
    }
}
