"""What a trial holds and how a dead one is recovered."""
