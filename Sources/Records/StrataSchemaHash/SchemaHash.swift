/// The hash behind derived schema versions (RecordFormat.md, "Schema versions"), in one place for
/// the record layer (format 2's versions, at run time) and the macro plugin (format 1's, at compile
/// time): FNV-1a 64 over the text's UTF-8, folded to 32 bits; 0 becomes 1 (0 is no version).
public enum SchemaHash {
    /// FNV-1a 64 of `text`, its halves XORed; never 0.
    public static func version(of text: String) -> UInt32 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let folded = UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
        return folded == 0 ? 1 : folded
    }
}
