"""Writing files so that a crash never leaves a half-written one (`atomic`: temporary file, then rename; the
atomic swap of two folders). The bottom layer, shared by every layer that writes: data caches, the candidate
store, run folders, reports."""
