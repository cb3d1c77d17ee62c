// TEMPORARY until cause15's schema-v3 fields land in TraceRecord: the names the export uses.
extension TraceRecord {
  var span: UInt64? { nil }
  var causeSpan: UInt64? { nil }
  var causePID: Int32? { nil }
  var traceID: String? { nil }
}
