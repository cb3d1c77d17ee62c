/*
 * The wake-up protocol of Sources/Core/Waker.swift, with the loop's side as the pass
 * (Sources/Core/EventRunLoop+Pass.swift, +Run.swift, +Polling.swift) drives it, checked
 * exhaustively by spin (scripts/check-models.sh).
 *
 * States and functions carry the Swift names: the waker's word is awake, noted,
 * waiting (with how: epoll, word or poll) or woken; the loop's own flag is
 * ignoringWakeUps. Every Swift access is sequentially consistent, which is what Promela's
 * interleaving of single statements gives; a compare-and-swap is one atomic statement,
 * and a waker's system call (the eventfd write, the futex wake) is a statement of its own
 * after the swap, as in the code.
 *
 * What is proved: whenever the whole system is stuck (the wakers are done and the loop
 * waits: spin's invalid end state), the loop is not asleep through anything it was told
 * about: a perform request (a job takes the same path), a signalled source, a stop, or a
 * mode emptied while a nested run sleeps in it. The outer run has no timeout, so a lost
 * wake-up is a sleep forever. The outer run is in mode A; a perform request's call-out
 * runs the loop nested in mode B, from step 3 (inside a pass) or step 9 (after the loop
 * woke), whichever the interleaving reaches. Each pass chooses how step 7 waits: in epoll,
 * on the sleep word, or polling first. One wait may end for another reason (the timerfd,
 * a signal): then a wake-up's eventfd write may land after the loop woke, and that event
 * ends a later wait.
 *
 * Seeded bugs, to show the checker finds them (scripts/check-models.sh runs each and
 * requires a failure): -DBUG_SKIP_WRITE (a waker that finds the loop waiting in epoll skips
 * its eventfd write), -DBUG_NO_HANDBACK (a nested run begun inside a pass keeps the
 * wake-ups it took), -DBUG_NO_STOP_CHECK (a dropped wake-up's stop or emptied mode is not
 * looked at before the sleep).
 */

mtype = { awake, noted, waiting, woken };
mtype = { epoll, word, poll };          /* Waker.Wait */

mtype state = awake;      /* the waker's word */
mtype how = epoll;        /* with `waiting`: how the loop waits (one word in the code) */
bit event = 0;            /* the eventfd has an event epoll has not reported yet */
byte sleepWord = 0;
bit otherReason = 1;      /* one wait may end for another reason (a timer, a signal) */

/* What the wakers publish before they wake the loop. */
bit performA = 0;         /* a perform request for mode A, whose call-out nests a run in B */
bit performB = 0;         /* a perform request for mode B */
bit keepB = 1;            /* mode B's only item; removing it empties the mode */
bit signalA = 0;          /* a custom source of mode A, signalled */
bit stopA = 0;            /* stop() of the outer run */

/* The loop's own state (its thread only). */
bit ignoringWakeUps = 1;  /* local.ignoringWakeUps: no run is active */
bit keepsNote = 0;        /* local.keepsNote */
bit tookWakeUp = 0;       /* local.wakeUpsTaken moved (a flag is enough here) */
byte depth = 0;           /* 0: no run; 1: the outer run in A; 2: the nested run in B */

/* Waker.wake(): the waker's side. */
inline wake() {
  atomic {
    if
    :: state == awake -> state = noted; wrote = 0
    :: state == waiting -> state = woken; wrote = how    /* the swap knows how */
    :: else -> wrote = 0  /* noted or woken: one is outstanding */
    fi
  }
  if
  :: wrote == epoll ->
#ifdef BUG_SKIP_WRITE
    skip
#else
    event = 1
#endif
  :: wrote == word -> sleepWord++
  :: else -> skip         /* awake, or a poll: the state is enough */
  fi;
  wrote = 0
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

/* Waker.takeNote() */
inline takeNote(taken) {
  atomic {
    if
    :: state == noted -> state = awake; taken = 1
    :: else -> taken = 0
    fi
  }
}

/* EventRunLoop.startCountingWakeUps(_:) */
inline startCountingWakeUps() {
  ignoringWakeUps = 0;
  if
  :: keepsNote -> keepsNote = 0; dropped = 0
  :: else -> takeNote(dropped)
  fi;
  if
  :: dropped ->
    tookWakeUp = 1;
    modeIsEmpty(isEmpty);
#ifndef BUG_NO_STOP_CHECK
    if
    :: (depth == 1 && stopA) || isEmpty -> wake()
    :: else -> skip
    fi
#endif
  :: else -> skip
  fi
}

/* EventRunLoop.startIgnoringWakeUps() */
inline startIgnoringWakeUps() {
  ignoringWakeUps = 1;
  keepsNote = (state == noted)
}

/* Waker.beginWait(_:): `began` is 0 when a note was there (and is taken). */
inline beginWait(w, began) {
  atomic {
    if
    :: state == awake -> state = waiting; how = w; began = 1
    :: else -> assert(state == noted); state = awake; began = 0
    fi
  }
}

/* Waker.endWait() */
inline endWait(wasWoken) {
  atomic { wasWoken = (state == woken); state = awake }
}

/* A non-blocking epoll_wait of a mode that watches a descriptor (which never becomes ready
   here): takes whatever event is there. */
inline pollEpoll() {
  atomic { if :: event -> event = 0 :: else -> skip fi }
}

/* Step 7 of a pass that may block: sleep(_:plan:buffer:), blockingWait, block, poll. */
inline sleepStep(watches) {
  takeNote(noteTaken);
  if
  :: noteTaken -> tookWakeUp = 1; if :: watches -> pollEpoll() :: else -> skip fi
  :: else ->
    if
    :: !watches ->                                   /* Waker.sleepOnWord() */
      seen = sleepWord;
      beginWait(word, began);
      if
      :: began ->
        atomic {
          if
          :: sleepWord != seen -> skip
          :: otherReason -> otherReason = 0      /* a signal, or a spurious return */
          fi
        };
        seen = 0;
        endWait(wasWoken);
        if :: wasWoken -> tookWakeUp = 1 :: else -> skip fi
      :: else -> tookWakeUp = 1
      fi
    :: watches ->
      caught = 0;
      if
      :: true ->                                     /* poll first */
        beginWait(poll, began);
        if
        :: began ->
          do
          :: state == woken -> break
          :: atomic { event -> event = 0 }; caught = 1; break
          :: true -> break                           /* the window ends */
          od;
          endWait(wasWoken);
          if :: wasWoken -> tookWakeUp = 1; caught = 1 :: else -> skip fi
        :: else -> tookWakeUp = 1; caught = 1
        fi
      :: true -> skip
      fi;
      if
      :: !caught ->                                  /* block in epoll */
        beginWait(epoll, began);
        if
        :: began ->
          atomic {
            if
            :: event -> event = 0
            :: otherReason -> otherReason = 0    /* the timerfd, say */
            fi
          };
          endWait(wasWoken);
          if :: wasWoken -> tookWakeUp = 1 :: else -> skip fi
        :: else -> tookWakeUp = 1
        fi
      :: else -> skip
      fi
    fi
  fi
}

/* Step 3 or 9 of the nested run (mode B): its perform requests. */
inline runPerformsB() {
  atomic { if :: performB -> performB = 0 :: else -> skip fi }
}

/* The passes of the nested run in mode B (no sources; watches or not, by choice). */
inline nestedPasses() {
  do
  ::
    if :: ignoringWakeUps -> startCountingWakeUps() :: else -> skip fi;   /* beginPass */
    runPerformsB();
    if :: nestedWatches = 0 :: nestedWatches = 1 fi;
    sleepStep(nestedWatches);
    startIgnoringWakeUps();
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
    outerIgnoring = ignoringWakeUps;
    if :: outerIgnoring -> startCountingWakeUps() :: else -> skip fi;
    tookBefore = tookWakeUp;
    tookWakeUp = 0;
    nestedPasses();
    if
    :: !outerIgnoring ->
#ifndef BUG_NO_HANDBACK
      if :: tookWakeUp -> wake() :: else -> skip fi;
#endif
      ignoringWakeUps = 0; keepsNote = 0
    :: outerIgnoring && !ignoringWakeUps -> startIgnoringWakeUps()
    :: else -> skip
    fi;
    tookWakeUp = tookBefore || tookWakeUp
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
  mtype wrote;
  bit isEmpty, dropped, noteTaken, sourceHandled, watches, ran, began, wasWoken, caught;
  byte seen;
  /* the nested run's */
  bit outerIgnoring, tookBefore, nestedWatches;
  /* runSpecific in mode A, begun with no run active */
  depth = 1;
  startCountingWakeUps();
  do
  ::
    if :: ignoringWakeUps -> startCountingWakeUps() :: else -> skip fi;   /* beginPass */
    runPerformsA();                                    /* step 3 */
    atomic {                                           /* step 4 */
      if :: signalA -> signalA = 0; sourceHandled = 1 :: else -> sourceHandled = 0 fi
    };
    if :: sourceHandled -> runPerformsA() :: else -> skip fi;
    if :: watches = 0 :: watches = 1 fi;
    if
    :: sourceHandled ->                                /* step 7 that does not block */
      takeNote(noteTaken);
      if :: noteTaken -> tookWakeUp = 1 :: else -> skip fi;
      if :: watches -> pollEpoll() :: else -> skip fi
    :: else -> sleepStep(watches)
    fi;
    startIgnoringWakeUps();
    runPerformsA();                                    /* step 9 */
    if :: stopA -> stopA = 0; break :: else -> skip fi
  od;
  depth = 0
}

proctype PerformA() { mtype wrote; performA = 1; wake() }
proctype PerformBThenEmptyB() { mtype wrote; performB = 1; wake(); keepB = 0; wake() }
proctype SignalA() { mtype wrote; signalA = 1; wake() }
proctype Stop() { mtype wrote; stopA = 1; wake() }

init {
  atomic {
    run Loop();
    run PerformA();
    run PerformBThenEmptyB();
    run SignalA();
    run Stop()
  }
}
