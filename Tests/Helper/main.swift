import RunLoopCore
print("helper")
