import RunLoopCore

print("helper")
