"""The instructor's grading tools: grade a class, build the student kit, the mutation, honest and hostile suites,
the grading benchmark. Not installed and never copied into the kit (the mutants hold solution text); run them from
the repository's root as modules, e.g. `python -m autograder.grade --help` (the Makefile's targets do)."""
