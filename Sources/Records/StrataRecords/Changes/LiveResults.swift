import Observation

/// An observed query's current results as an `@Observable` model, for an app's views: a view
/// that reads ``records`` redraws when a commit changes them.
///
/// ```swift
/// @MainActor
/// func showTeam(_ store: Store) async {
///     let team = LiveResults(Player.query(team: "red"), in: store)
///     await team.run()   // SwiftUI: .task { await team.run() }; the view reads team.records
/// }
/// ```
///
/// It lives on the main actor, where views read it; ``run()`` keeps it current
/// (``Store/observe(_:limit:order:)``) until its task is cancelled, and sets ``failure`` if a read
/// fails.
@MainActor
@Observable
public final class LiveResults<R: Record & Sendable> {
    /// The query's records, in its order, as of ``version``; empty until the first snapshot.
    public private(set) var records: [R] = []
    /// The version of the snapshot ``records`` come from (``QuerySnapshot/version``); `nil`
    /// until the first one.
    public private(set) var version: UInt64?
    /// What the last snapshot changed (``QuerySnapshot/changes``): `nil` for the first.
    public private(set) var changes: QueryChanges?
    /// The error that ended ``run()``, if a read failed.
    public private(set) var failure: (any Error)?

    @ObservationIgnored private let observation: QueryObservation<R>

    /// A model of `query`'s results in `store` (at most `limit`, in `order`); nothing is read
    /// until ``run()``.
    public init(_ query: Query<R>, in store: Store, limit: Int? = nil, order: Order? = nil) {
        observation = store.observe(query, limit: limit, order: order)
    }

    /// Keeps ``records`` current, snapshot by snapshot, until the task is cancelled or a read
    /// fails (then ``failure`` says why).
    public func run() async {
        do {
            for try await snapshot in observation {
                records = snapshot.records
                version = snapshot.version
                changes = snapshot.changes
            }
        } catch {
            failure = error
        }
    }
}
