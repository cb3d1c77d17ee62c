// TEMPORARY until cause15's schema-v3 fields land in TraceRecord: the names the export uses.
extension TraceRecord {
  var span: String? { nil }
  var causeSpan: String? { nil }
  var causePid: Int32? { nil }
  var trace: String? { nil }
}
