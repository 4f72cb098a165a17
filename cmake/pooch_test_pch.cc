// The source of pooch_test_pch, the target that builds the tests' precompiled header
// (Note [Test precompiled header] in cmake/PoochTesting.cmake); its main is GoogleTest's.
