"""Writing files so that a crash never leaves a half-written one (`atomic`: temporary file, then rename; the
atomic swap of two folders), and the kit of the self-contained HTML pages written that way (`html_page`). The bottom
layer, shared by every layer that writes: data caches, the candidate store, run folders, reports."""
