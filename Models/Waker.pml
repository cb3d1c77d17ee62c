/*
 * The wake-up protocol of Sources/Core/WakeState.swift, with the loop's side as the pass
 * (Sources/Core/EventRunLoop+Pass.swift, +Run.swift, +Polling.swift) drives it, checked
 * exhaustively by spin (scripts/check-models.sh).
 *
 * States and functions carry the Swift names. Every Swift access is sequentially
 * consistent, which is what Promela's interleaving of single statements gives; a
 * compare-and-swap is one atomic statement, and a waker's system call (the eventfd write,
 * the futex wake) is a statement of its own after the swap, as in the code.
 *
 * What is proved: whenever the whole system is stuck (the wakers are done and the loop
 * waits: spin's invalid end state), the loop is not asleep through anything it was told about: a perform
 * request (a job takes the same path), a signalled source, a stop, or a mode emptied while
 * a nested run sleeps in it. The outer run has no timeout, so a lost wake-up is a sleep
 * forever. The outer run is in mode A; a perform request's call-out runs the loop nested in
 * mode B, from step 3 (inside a pass) or step 9 (after the loop woke), whichever the
 * interleaving reaches. Each pass chooses how step 7 waits: in epoll, on the sleep word, or
 * polling first. stop() is modelled for the outermost run.
 *
 * Seeded bugs, to show the checker finds them (scripts/check-models.sh runs each and
 * requires a failure): -DBUG_SKIP_WRITE (a waker that finds `blocking` skips its eventfd
 * write), -DBUG_NO_HANDBACK (a nested run begun inside a pass keeps the wake-ups it took),
 * -DBUG_KEEP_DROPPED (a pass that begins after a dropped wake-up skips its check).
 */

mtype = { awake, noted, blocking, written, polling, marked, ignoring, dropped, sleeping, roused };
mtype = { inPass, fromIgnoring, fromDropped };   /* WakeState.RunStart */

mtype phase = ignoring;   /* a loop that is not running ignores wake-ups */
bit event = 0;            /* the eventfd has an event epoll has not reported yet */
byte word = 0;            /* the sleep word */

/* What the wakers publish before they wake the loop. */
bit performA = 0;         /* a perform request for mode A, whose call-out nests a run in B */
bit performB = 0;         /* a perform request for mode B */
bit keepB = 1;            /* mode B's only item; removing it empties the mode */
bit signalA = 0;          /* a custom source of mode A, signalled */
bit stopA = 0;            /* stop() of the outer run */

/* The loop's own state (its thread only). */
bit localIgnoring = 1;    /* local.ignoringWakeUps */
bit tookWakeUp = 0;       /* local.wakeUpsTaken moved (a flag is enough here) */
byte depth = 0;           /* 0: no run; 1: the outer run in A; 2: the nested run in B */
bit loopDone = 0;

/* WakeState.request(): the waker's side. */
inline request() {
  next = 0;
  atomic {
    if
    :: phase == awake -> phase = noted
    :: phase == blocking -> phase = written; next = written
    :: phase == polling -> phase = marked
    :: phase == ignoring -> phase = dropped
    :: phase == sleeping -> phase = roused; next = roused
    :: else -> skip     /* noted, written, marked, roused, dropped: one is outstanding */
    fi
  }
#ifdef BUG_SKIP_WRITE
  if
  :: next == written -> skip
  :: next == roused -> word++
  :: else -> skip
  fi
#else
  if
  :: next == written -> event = 1
  :: next == roused -> word++
  :: else -> skip
  fi
#endif
}

/* modeIsEmpty(_:) of the running mode. A perform request keeps a mode from being empty
   in the code, but no wake-up announces its end (the loop runs it): what the model checks is
   the removal of an item by another thread, so mode B's emptiness here is `keepB` alone. */
inline modeIsEmpty(result) {
  if
  :: depth == 2 -> result = (keepB == 0)
  :: else -> result = 0     /* mode A keeps its source */
  fi
}

/* wakeForWhatADroppedWakeUpAnnounced(_:): a stop or an emptied mode. */
inline wakeForDropped() {
  modeIsEmpty(isEmpty);
  if
  :: (depth == 1 && stopA) || isEmpty -> request()
  :: else -> skip
  fi
}

/* The start of a pass in runPasses: local.ignoringWakeUps, WakeState.passBegins(), and the
   check the pass makes for a dropped wake-up. */
inline passBegins() {
  localIgnoring = 0;
  wasDropped = 0;
  atomic {
    if
    :: phase == ignoring -> phase = awake
    :: phase == dropped -> phase = awake; wasDropped = 1
    :: else -> skip
    fi
  }
#ifndef BUG_KEEP_DROPPED
  if :: wasDropped -> wakeForDropped() :: else -> skip fi
#endif
}

/* WakeState.startIgnoring(). */
inline startIgnoring() {
  atomic { if :: phase == awake || phase == blocking -> phase = ignoring :: else -> skip fi }
}

/* startIgnoringWakeUps(afterTaking:in:): `took` says whether the batch holds the event. */
inline startIgnoringAfterTaking(took) {
  localIgnoring = 1;
  if
  :: took -> atomic { assert(phase == written); phase = ignoring }; tookWakeUp = 1
  :: else -> startIgnoring()
  fi
}

/* A non-blocking epoll_wait of a mode that watches a descriptor (which never becomes ready
   here): takes the wake-up's event if there is one. */
inline pollEpoll(took) {
  atomic { if :: event -> event = 0; took = 1 :: else -> took = 0 fi }
}

/* WakeState.takeNote(). */
inline takeNote(taken) {
  if
  :: phase == noted -> phase = awake; taken = 1
  :: else -> taken = 0
  fi
}

/* WakeState.enter(_:) */
inline enter(waiting, entry) {
  atomic {
    if
    :: phase == awake -> phase = waiting; entry = 0        /* entered */
    :: phase == noted -> phase = awake; entry = 1          /* woken */
    :: else -> assert(phase == written); entry = 2         /* eventPending */
    fi
  }
}

/* Step 7 of a pass that may block: wait(_:plan:buffer:) and blockingWait. */
inline sleepStep(took, watches) {
  took = 0;
  atomic { takeNote(noteTaken) };
  if
  :: noteTaken -> tookWakeUp = 1; if :: watches -> pollEpoll(took) :: else -> skip fi
  :: else ->
    if
    :: !watches ->                                   /* sleepOnWord() */
      seen = word;
      enter(sleeping, entry);
      if
      :: entry == 1 -> tookWakeUp = 1
      :: entry == 0 ->
        (word != seen);
        atomic { assert(phase == roused || phase == sleeping); phase = ignoring };
        tookWakeUp = 1
      :: entry == 2 ->                               /* the event is in epoll: take it */
        enter(blocking, entry);
        atomic { event -> event = 0; took = 1 }
      fi
    :: watches ->
      if
      :: true ->                                     /* poll first: poll(into:from:until:) */
        enter(polling, entry);
        if
        :: entry == 1 -> tookWakeUp = 1; goto polled
        :: else -> skip
        fi;
        do
        :: entry == 0 && phase == marked -> break
        :: atomic { event -> event = 0; took = 1 }; break
        :: true -> break                             /* the window ends */
        od;
        if
        :: entry == 0 ->                             /* endPolling() */
          atomic {
            if
            :: phase == polling -> phase = awake
            :: else -> assert(phase == marked); phase = awake; tookWakeUp = 1; goto polled
            fi
          }
        :: else -> skip
        fi;
        if :: took -> goto polled :: else -> skip fi
      :: true -> skip
      fi;
      enter(blocking, entry);                        /* block(into:onSleepWord:) */
      if
      :: entry == 1 -> tookWakeUp = 1
      :: else ->
        atomic { event -> event = 0; took = 1 }
      fi;
polled: skip
    fi
  fi
}

/* Step 3 or 9 of the nested run (mode B): its perform requests. */
inline runPerformsB() {
  atomic { if :: performB -> performB = 0 :: else -> skip fi }
}

/* One pass of the nested run in mode B (it has no sources; watches or not, by choice). */
inline nestedPasses() {
  do
  ::
    passBegins();
    runPerformsB();
    if :: nestedWatches = 0 :: nestedWatches = 1 fi;
    sleepStep(nestedTook, nestedWatches);
    startIgnoringAfterTaking(nestedTook);
    runPerformsB();
    modeIsEmpty(isEmpty);
    if :: isEmpty -> break :: else -> skip fi
  od
}

/* runSpecific for the nested run, called from a perform request's call-out. */
inline nestedRun() {
  depth = 2;
  modeIsEmpty(isEmpty);
  if
  :: isEmpty -> skip                                  /* finished before any observer */
  :: else ->
    outerIgnoring = localIgnoring;
    if                                                /* WakeState.runBegins */
    :: !outerIgnoring -> start = inPass
    :: else ->
      atomic {
        if
        :: phase == ignoring -> phase = awake; start = fromIgnoring
        :: phase == dropped -> phase = awake; start = fromDropped
        :: else -> start = fromIgnoring
        fi
      }
    fi;
    localIgnoring = 0;
    tookBefore = tookWakeUp;
    tookWakeUp = 0;
    if :: start == fromDropped -> wakeForDropped() :: else -> skip fi;
    nestedPasses();
    /* WakeState.runEnds(beganIn:), then the hand-back of a wake-up taken inside a pass */
    handBack = 0;
    atomic {
      if
      :: (phase == ignoring || phase == dropped) && start == inPass ->
        handBack = (phase == dropped); phase = awake
      :: phase == ignoring && start == fromIgnoring -> skip
      :: (phase == ignoring && start == fromDropped) || (phase == dropped && start != inPass) ->
        phase = dropped
      :: phase == awake && start == fromIgnoring -> phase = ignoring
      :: phase == awake && start == fromDropped -> phase = dropped
      :: else -> skip
      fi
    }
    if
    :: handBack -> request()
#ifndef BUG_NO_HANDBACK
    :: !handBack && start == inPass && tookWakeUp -> request()
#endif
    :: else -> skip
    fi;
    tookWakeUp = tookBefore || tookWakeUp;
    localIgnoring = outerIgnoring
  fi;
  depth = 1
}

/* Step 3 or 9 of the outer run (mode A): its perform request, whose call-out nests. */
inline runPerformsA() {
  ran = 0;
  atomic { if :: performA -> performA = 0; ran = 1 :: else -> skip fi };
  if :: ran -> nestedRun() :: else -> skip fi
}

proctype Loop() {
  mtype next;           /* request()'s */
  bit isEmpty, wasDropped, noteTaken, sourceHandled, took, watches, ran;
  byte entry, seen;
  /* the nested run's */
  bit outerIgnoring, tookBefore, handBack, nestedTook, nestedWatches;
  mtype start;
  /* runSpecific in mode A, begun with no run active (the ignoring window) */
  depth = 1;
  atomic {
    if
    :: phase == ignoring -> phase = awake
    :: phase == dropped -> phase = awake; wakeForDropped()
    :: else -> skip
    fi
  };
  localIgnoring = 0;
  do
  ::
    passBegins();
    runPerformsA();                                    /* step 3 */
    atomic {                                           /* step 4 */
      if :: signalA -> signalA = 0; sourceHandled = 1 :: else -> sourceHandled = 0 fi
    };
    if :: sourceHandled -> runPerformsA() :: else -> skip fi;
    if :: watches = 0 :: watches = 1 fi;
    if
    :: sourceHandled ->                                /* step 7 that does not block */
      atomic { takeNote(noteTaken) };
      if :: noteTaken -> tookWakeUp = 1 :: else -> skip fi;
      took = 0;
      if :: watches || event -> pollEpoll(took) :: else -> skip fi
    :: else -> sleepStep(took, watches)
    fi;
    startIgnoringAfterTaking(took);
    runPerformsA();                                    /* step 9 */
    if :: stopA -> stopA = 0; break :: else -> skip fi
  od;
  depth = 0;
  localIgnoring = 1;
  atomic { if :: phase == awake -> phase = ignoring :: else -> skip fi };
  loopDone = 1
}

proctype PerformA() { mtype next; performA = 1; request() }
proctype PerformBThenEmptyB() { mtype next; performB = 1; request(); keepB = 0; request() }
proctype SignalA() { mtype next; signalA = 1; request() }
proctype Stop() { mtype next; stopA = 1; request() }

init {
  atomic {
    run Loop();
    run PerformA();
    run PerformBThenEmptyB();
    run SignalA();
    run Stop()
  }
}
