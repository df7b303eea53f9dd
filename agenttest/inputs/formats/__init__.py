"""The seed formats agent-test reads as found (FORMATS §18): files written for the documents agent-test was built
from, read strictly as their documents say and turned into agent-test's own cases, each with an ``-i`` source that
also recognises its files by their shape — ``a`` (scenario suites), ``b`` (eval-mock scenarios, a package), ``c`` (world scenarios);
``strict`` is what reading a JSON format strictly shares (fields, ids, places)."""
