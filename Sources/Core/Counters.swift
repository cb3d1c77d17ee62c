import Synchronization

// Process-wide counters. `Atomic` is visible to ThreadSanitizer, unlike `Mutex`.
let loopIdentityCounter = Atomic<UInt64>(0)
// Descriptor tokens 0 and 1 are the loop's own eventfd and timerfd.
let descriptorTokenCounter = Atomic<UInt64>(1)
