/* C++ through libstdc++, without frame pointers: a std::thread (started by libstdc++'s
 * execute_native_thread_routine) sorts strings with a comparator that hashes them through
 * libstdc++'s std::_Hash_bytes.  Every stack crosses libstdc++ twice and libc once.
 * Usage: cppsort [SECONDS] (default 3). */
// build: -fomit-frame-pointer -momit-leaf-frame-pointer
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

__attribute__((noinline)) bool by_hash(const std::string &a, const std::string &b)
{
	std::hash<std::string> h;

	return h(a) < h(b);
}

__attribute__((noinline)) void sorter(double seconds)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	std::vector<std::string> v;
	unsigned seed = 1;

	for (int i = 0; i < 2000; i++)
		v.push_back(std::string(64, 'a' + i % 26) + std::to_string(i));
	while (std::chrono::steady_clock::now() < end) {
		for (auto &s : v)
			s[seed++ % 64] = 'a' + seed % 26;
		std::sort(v.begin(), v.end(), by_hash);
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	std::thread t(sorter, seconds);

	t.join();
	return 0;
}
