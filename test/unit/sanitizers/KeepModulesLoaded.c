// Preloaded into every process of the sanitizer suite
// (test/sanitizers/lit_sanitizers.py): dlclose() leaves the module loaded.
//
// Open MPI loads its MCA components with dlopen and unloads them in
// MPI_Finalize, before LeakSanitizer looks at the heap at exit. The memory
// those components keep until exit is then reported from addresses that no
// loaded module owns, which no suppression can name. Only ASan's slow
// unwinder (fast_unwind_on_malloc=0) walked from such frames on to the linked
// libmpi.so frames that lsan.supp names, and it made every allocation of the
// suite several times dearer. With the components still mapped at exit,
// their own paths match lsan.supp on the fast unwinder's stacks.
//
// Not instrumented (the sanitizer runtime lives in the executables); a
// module that stays mapped changes nothing a test checks.

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
