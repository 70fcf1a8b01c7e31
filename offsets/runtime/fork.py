"""What a forked child forgets of its parent's other threads (`core.Runtime.after_fork`): the
imports they had in progress and sysconfig's config vars they were filling. Imported with the
runtime, so that a child imports nothing before it has forgotten them."""
import sys
from _thread import get_ident


def forget_imports_of_gone_threads() -> None:
    """In a forked child: an import another thread had in progress at fork time (a first lookup
    importing `binary.py`...) never finishes here, and importing that module again would wait for
    its lock forever. Each such import is forgotten (its lock and its half-run module), so the next
    import runs it again; an extension module's is left alone (its C state may be half made)."""
    bootstrap = sys.modules.get("_frozen_importlib")
    locks = getattr(bootstrap, "_module_locks", None)
    if not locks:
        return
    import _imp

    me, extension = get_ident(), tuple(_imp.extension_suffixes())
    for name, ref in list(locks.items()):
        owner = getattr(ref(), "owner", None)
        if owner is None or owner == me:
            continue
        spec = getattr(sys.modules.get(name), "__spec__", None)
        if getattr(spec, "_initializing", False):
            origin = getattr(spec, "origin", None) or ""
            if origin == "built-in" or origin.endswith(extension):
                continue
            del sys.modules[name]
        del locks[name]
    blocking = getattr(bootstrap, "_blocking_on", None)      # thread id -> the locks it waits for
    waits = getattr(blocking, "data", blocking)
    if isinstance(waits, dict):
        for tid in [t for t in waits if t != me]:
            waits.pop(tid, None)


def forget_half_made_config_vars() -> None:
    """In a forked child: sysconfig's config vars (which the identity reads) that another thread
    was filling at fork time are half made, and on 3.12+ the lock it filled them under is held by
    no thread here; both are made anew, so the next `get_config_var` fills them again. (In the
    child, the one thread is the one that forked, never inside sysconfig: unfinished means cut.)"""
    sysconfig = sys.modules.get("sysconfig")
    made = getattr(sysconfig, "_CONFIG_VARS", None)
    lock = getattr(sysconfig, "_CONFIG_VARS_LOCK", None)
    if lock is not None:                # 3.12+: a flag says when they are made
        if not getattr(sysconfig, "_CONFIG_VARS_INITIALIZED", True):
            sysconfig._CONFIG_VARS, sysconfig._CONFIG_VARS_LOCK = None, type(lock)()
    elif made is not None and "srcdir" not in made:        # before: srcdir is among the last set
        sysconfig._CONFIG_VARS = None
