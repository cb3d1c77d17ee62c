import RunLoopCore
import RunLoopObservers
import RunLoopTimers

let loop = EventRunLoop.current
for n in 1...3 {
  let timer = try LoopTimer(fireAt: .now + .milliseconds(200 * n)) { _ in print("timer \(n)") }
  try loop.add(timer, mode: .default)
}
let observer = LoopObserver(activities: [.beforeWaiting, .afterWaiting]) { _, activity in
  print("  \(activity)")
}
loop.add(observer, mode: .default)
let result = try loop.run(mode: .default, timeout: .milliseconds(1_500))
print("the run returned \(result)")
