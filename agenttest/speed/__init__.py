"""Speed machinery: the kept code of agenttest's dataclasses (``classcache``), the garbage collector at
start-up and in a run (``collector``), and fast copies and constructors of our frozen records (``records``)."""
