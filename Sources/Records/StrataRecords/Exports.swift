// One import for users: the record layer's API uses the core's options and errors and the key
// codec's readers and writers.
@_exported import StrataEngine
@_exported import StrataKeyCodec
