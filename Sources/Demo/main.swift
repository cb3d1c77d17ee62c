import RunLoopCore

print("runloop-demo")
