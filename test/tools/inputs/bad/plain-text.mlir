this is not IR at all
