import Glibc

/// Writes a line to standard error with one `write(2)`, so lines from threads do not mix.
func writeStandardError(_ line: String) {
  var text = line
  if !text.hasSuffix("\n") { text += "\n" }
  text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}
