// expect: compiles
// A public record is Sendable, with its IndexKey, when the attribute says so.
import Strata

@IndexKeyRecord("id", sendable: true)
public struct SharedNote {
    public let id: Int
    public var text: String
}

func needsSendable<T: Sendable>(_: T.Type) {}

func check() {
    needsSendable(SharedNote.self)
    needsSendable(SharedNote.IndexKey.self)
}
