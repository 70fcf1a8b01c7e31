/* A program that embeds CPython, as uwsgi-like hosts do (built by tests/deployment.py).
 *
 * It ignores its arguments (they are its own, not Python's) and runs the application in $EMBED_APP,
 * after appending its pid to $EMBED_COUNTER (one line per run of the host program). How it names
 * itself is $EMBED_MODE:
 *   none          nothing: sys.executable is what CPython finds (the first python3 on PATH)
 *   program_name  PyConfig.program_name = argv[0]
 *   executable    PyConfig.executable = argv[0]
 *   legacy        Py_SetProgramName(argv[0]) and Py_Initialize() (deprecated, still in 3.12)
 * $EMBED_HOME, when set, is PyConfig.home (Py_SetPythonHome in legacy mode).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
count_this_run(void)
{
    const char *counter = getenv("EMBED_COUNTER");
    FILE *f = counter ? fopen(counter, "a") : NULL;
    if (f != NULL) {
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
    }
}

static void
legacy_init(const char *argv0, const char *home)
{
#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    static wchar_t *name, *whome;
    name = Py_DecodeLocale(argv0, NULL);
    Py_SetProgramName(name);
    if (home != NULL) {
        whome = Py_DecodeLocale(home, NULL);
        Py_SetPythonHome(whome);
    }
    Py_Initialize();
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif
}

static void
config_init(const char *mode, const char *argv0, const char *home)
{
    PyConfig config;
    PyStatus status;
    PyConfig_InitPythonConfig(&config);
    status = PyStatus_Ok();
    if (strcmp(mode, "program_name") == 0) {
        status = PyConfig_SetBytesString(&config, &config.program_name, argv0);
    }
    else if (strcmp(mode, "executable") == 0) {
        status = PyConfig_SetBytesString(&config, &config.executable, argv0);
    }
    if (!PyStatus_Exception(status) && home != NULL) {
        status = PyConfig_SetBytesString(&config, &config.home, home);
    }
    if (!PyStatus_Exception(status)) {
        status = Py_InitializeFromConfig(&config);
    }
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        Py_ExitStatusException(status);
    }
}

int
main(int argc, char **argv)
{
    const char *mode = getenv("EMBED_MODE"), *app = getenv("EMBED_APP"), *home = getenv("EMBED_HOME");
    int rc;
    (void)argc;
    count_this_run();
    if (mode == NULL || app == NULL) {
        fprintf(stderr, "embed: set EMBED_MODE and EMBED_APP\n");
        return 2;
    }
    if (strcmp(mode, "legacy") == 0) {
        legacy_init(argv[0], home);
    }
    else {
        config_init(mode, argv[0], home);
    }
    rc = PyRun_SimpleString(app);
    if (Py_FinalizeEx() < 0) {
        rc = 120;
    }
    return rc ? 1 : 0;
}
