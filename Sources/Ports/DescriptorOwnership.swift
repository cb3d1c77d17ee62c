/// Who closes the file descriptor of a ``DescriptorSource`` (or a socket source).
///
/// ```swift
/// let source = DescriptorSource(fileDescriptor: fd, ownership: .owned, onReadable: { _ in })
/// source.invalidate()  // closes fd, because the source owns it
/// ```
public enum DescriptorOwnership: Sendable, Hashable {
  /// The caller keeps the descriptor: it closes it itself, after ``DescriptorSource/invalidate()``.
  ///
  /// ```swift
  /// let source = DescriptorSource(fileDescriptor: STDIN_FILENO, ownership: .borrowed)
  /// ```
  case borrowed
  /// The source owns the descriptor and closes it exactly once, when it is invalidated.
  ///
  /// ```swift
  /// let source = DescriptorSource(fileDescriptor: eventfd(0, 0), ownership: .owned)
  /// ```
  case owned
}
