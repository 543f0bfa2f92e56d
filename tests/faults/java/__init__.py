"""The Java-broker fault scenarios of issue 24 (entry point: tests/faults/java.py).

Three of our name servers, each embedding one node of a three-node controller group, in network
namespaces n0..n2; three Apache RocketMQ 5.3.3 brokers of one broker set in controller mode in
b0..b2; the Java producer/consumer (SendConsume of the java-broker package) in c. Built on
tests/faults/netns.py. java-broker's own scripts only take loopback addresses, so this package
writes the brokers' configuration and the JVM command lines itself, with the same settings
(nsproc.py). The test process stays in the root namespace: its observers run in threads that
entered namespace c with setns(2) (nsthread.py) and speak the remoting protocol with
tests/compat/controller/remoting.py and watch.py.

  nsthread.py   threads inside a namespace (setns), a pool of them, pollers
  nsproc.py     the name servers, the Java brokers and the Java client, each in its namespace
  rig.py        one scenario's processes and the views of the set (controller, routes, brokers)
  scenarios.py  java-master-paused, java-leader-partitioned, java-double-kill and their checks
  main.py       the command line (tests/faults/java.py)
"""
